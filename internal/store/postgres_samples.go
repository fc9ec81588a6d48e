package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Samples in PostgreSQL: tables samples and sample_chunks (elements encoded
// by codec.go).

// insertSampleSQL is a sample's row: CreateSample's statement, and
// warmSampleWrite's.
const insertSampleSQL = `INSERT INTO samples (id, created_at, dataset, header, reported, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`

// copySampleChunks copies rows (sample_id, seq, data) into sample_chunks:
// CreateSample's COPY, and warmSampleWrite's.
func copySampleChunks(ctx context.Context, tx pgx.Tx, rows [][]any) error {
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"sample_chunks"}, []string{"sample_id", "seq", "data"}, pgx.CopyFromRows(rows))
	return err
}

// warmSampleWrite runs a sample's write (CreateSample's statements) on a
// new connection, in a transaction it rolls back: nothing is written, but
// the connection has prepared the statements (pgx's statement cache) and its
// server process has read the tables' catalog entries before a release
// needs them. A release's write on a fresh connection took 10-20 ms longer
// than on a used one on this project's machines (docs/performance.md, "A
// restarted pwsd's connections"). It is the pool's AfterConnect; an error
// leaves the connection as it was (rolled back), since a connection that
// cannot run the warm-up can still serve what it can.
func warmSampleWrite(ctx context.Context, conn *pgx.Conn) error {
	_ = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		const id = "00000000000000000000000000000000" // never committed
		if _, err := tx.Exec(ctx, insertSampleSQL, id, time.Now().UTC(), nil, []byte(`{}`), int64(1), nil); err != nil {
			return err
		}
		if err := copySampleChunks(ctx, tx, [][]any{{id, int32(0), []byte{}}}); err != nil {
			return err
		}
		return errRollBack
	})
	return nil
}

// errRollBack makes pgx.BeginFunc roll its transaction back.
var errRollBack = errors.New("rolled back on purpose")

// CreateSample implements Samples.
func (p *Postgres) CreateSample(ctx context.Context, s *Sample, c *Charge) error {
	return p.chargeTx(ctx, func(pgx.Tx) (*Charge, error) { return c, nil }, func(tx pgx.Tx) error {
		var dataset any
		if s.Dataset != "" {
			dataset = s.Dataset
		}
		var expires any
		if !s.ExpiresAt.IsZero() {
			expires = s.ExpiresAt
		}
		_, err := tx.Exec(ctx, insertSampleSQL, s.ID, s.CreatedAt, dataset, s.Header, int64(len(s.Elements)), expires)
		switch {
		case isUniqueViolation(err):
			return ErrExists
		case isForeignKeyViolation(err):
			return fmt.Errorf("storing sample for dataset: %w", ErrNotFound)
		case err != nil:
			return fmt.Errorf("storing sample: %w", err)
		}
		var rows [][]any
		buf := []byte{}
		for seq, start := 0, 0; start < len(s.Elements); seq, start = seq+1, start+chunkSize {
			end := min(start+chunkSize, len(s.Elements))
			buf = encodeElements(buf[:0], s.Elements[start:end])
			rows = append(rows, []any{s.ID, int32(seq), append([]byte(nil), buf...)})
		}
		if err := copySampleChunks(ctx, tx, rows); err != nil {
			return fmt.Errorf("storing sample elements: %w", err)
		}
		return nil
	})
}

// GetSample implements Samples.
func (p *Postgres) GetSample(ctx context.Context, id string) (*Sample, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	s := &Sample{ID: id}
	var dataset *string
	var reported int64
	var expires *time.Time
	err := p.pool.QueryRow(ctx, `SELECT created_at, dataset, header, reported, expires_at FROM samples WHERE id = $1 AND (expires_at IS NULL OR expires_at > $2)`, id, time.Now()).
		Scan(&s.CreatedAt, &dataset, &s.Header, &reported, &expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("reading sample: %w", err)
	}
	if dataset != nil {
		s.Dataset = *dataset
	}
	if expires != nil {
		s.ExpiresAt = expires.UTC()
	}
	s.CreatedAt = s.CreatedAt.UTC()
	s.Elements = make([]Element, 0, reported)
	rows, err := p.pool.Query(ctx, `SELECT data FROM sample_chunks WHERE sample_id = $1 ORDER BY seq`, id)
	if err != nil {
		return nil, fmt.Errorf("reading sample elements: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			return nil, fmt.Errorf("reading sample chunk: %w", err)
		}
		if s.Elements, err = decodeElements(s.Elements, data); err != nil {
			return nil, fmt.Errorf("decoding sample %s: %w", id, err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading sample elements: %w", err)
	}
	if int64(len(s.Elements)) != reported { // deleted or purged between the two reads
		return nil, ErrNotFound
	}
	return s, nil
}

// ListSamples implements Samples.
func (p *Postgres) ListSamples(ctx context.Context, c Cursor, limit int) ([]*Sample, error) {
	if err := checkCursor(c); err != nil {
		return nil, err
	}
	t, id := cursorArgs(c)
	rows, err := p.pool.Query(ctx, `SELECT id, created_at, coalesce(dataset, ''), header, reported, expires_at FROM samples
		WHERE (created_at, id) > ($1, $2) AND (expires_at IS NULL OR expires_at > $3)
		ORDER BY created_at, id LIMIT $4`, t, id, time.Now(), limit)
	if err != nil {
		return nil, fmt.Errorf("listing samples: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Sample, error) {
		s := &Sample{}
		var reported int64
		var expires *time.Time
		if err := r.Scan(&s.ID, &s.CreatedAt, &s.Dataset, &s.Header, &reported, &expires); err != nil {
			return nil, err
		}
		s.CreatedAt, s.Reported = s.CreatedAt.UTC(), int(reported)
		if expires != nil {
			s.ExpiresAt = expires.UTC()
		}
		return s, nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing samples: %w", err)
	}
	return out, nil
}

// DeleteSample implements Samples; its chunks go by ON DELETE CASCADE.
func (p *Postgres) DeleteSample(ctx context.Context, id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	tag, err := p.pool.Exec(ctx, `DELETE FROM samples WHERE id = $1 AND (expires_at IS NULL OR expires_at > $2)`, id, time.Now())
	if err != nil {
		return fmt.Errorf("deleting sample: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

const legacyHeader = `coalesce((header->>'format')::int, 0) < $1`

// RewriteSampleHeaders implements FormatRewriter.
func (p *Postgres) RewriteSampleHeaders(ctx context.Context, format int, fn func([]byte) ([]byte, error)) (int, error) {
	rows, err := p.pool.Query(ctx, `SELECT id FROM samples WHERE `+legacyHeader+` ORDER BY id`, format)
	if err != nil {
		return 0, fmt.Errorf("listing samples to rewrite: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("listing samples to rewrite: %w", err)
	}
	n := 0
	for _, id := range ids {
		err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
			var h []byte
			err := tx.QueryRow(ctx, `SELECT header FROM samples WHERE id = $2 AND `+legacyHeader+` FOR UPDATE`, format, id).Scan(&h)
			if errors.Is(err, pgx.ErrNoRows) { // deleted or rewritten meanwhile
				return nil
			}
			if err != nil {
				return err
			}
			if h, err = fn(h); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE samples SET header = $2 WHERE id = $1`, id, h); err != nil {
				return err
			}
			n++
			return nil
		})
		if err != nil {
			return n, fmt.Errorf("rewriting sample %s: %w", id, err)
		}
	}
	return n, nil
}

// purgeExpiredSamples deletes the samples expired at now (PurgeExpired);
// their chunks go by ON DELETE CASCADE.
func (p *Postgres) purgeExpiredSamples(ctx context.Context, now time.Time) (int64, error) {
	tag, err := p.pool.Exec(ctx, `DELETE FROM samples WHERE expires_at <= $1`, now)
	if err != nil {
		return 0, fmt.Errorf("purging expired samples: %w", err)
	}
	return tag.RowsAffected(), nil
}
