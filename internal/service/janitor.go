package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/pwsd/pwsd/internal/store"
)

// purgeExpired deletes expired samples and idempotency keys now.
func (s *Service) purgeExpired(ctx context.Context) (store.PurgeCount, error) {
	n, err := s.store.PurgeExpired(ctx, time.Now())
	if err != nil {
		return n, fmt.Errorf("purging: %w", err)
	}
	return n, nil
}

// RunJanitor purges expired samples and idempotency keys every interval
// until ctx ends. Reads never see expired rows whether or not it runs; it
// keeps storage bounded.
func (s *Service) RunJanitor(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n, err := s.purgeExpired(ctx)
			switch {
			case err != nil && !errors.Is(err, context.Canceled):
				s.log.Warn("purging expired rows failed", "error", err)
			case n.Samples > 0 || n.IdempotencyKeys > 0:
				s.log.Info("purged expired rows", slog.Int64("samples", n.Samples), slog.Int64("idempotency_keys", n.IdempotencyKeys))
			}
		}
	}
}
