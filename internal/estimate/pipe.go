package estimate

import (
	"fmt"
	"runtime"
	"sync/atomic"
)

// pipeBatchRows is how many dense rows travel together from the sanitizer
// goroutine to the estimator in pipeUnitRows.
const pipeBatchRows = 256

// pipeBatches is how many batches are in flight (being filled, queued,
// being consumed).
const pipeBatches = 4

// rowBatch holds dense rows: row k is frequency i[k], reporting
// probability pi[k], cells lo[k]+1 .. with masses m[end[k-1]:end[k]].
type rowBatch struct {
	i      []int64
	pi, lo []float64
	end    []int
	m      []float64
}

func (b *rowBatch) reset() {
	b.i, b.pi, b.lo, b.end, b.m = b.i[:0], b.pi[:0], b.lo[:0], b.end[:0], b.m[:0]
}

func (b *rowBatch) add(i int64, pi, lo float64, m []float64) {
	b.i = append(b.i, i)
	b.pi = append(b.pi, pi)
	b.lo = append(b.lo, lo)
	b.m = append(b.m, m...)
	b.end = append(b.end, len(b.m))
}

// pipeUnitRows is us.UnitRows(from, to, fn) with the rows computed on
// another goroutine, so that computing the sanitizer rows and consuming
// them (the estimator passes) overlap on two cores. fn is called in the
// caller's goroutine with the same rows in the same order, so the results
// are those of the direct call; rows past the one where fn returns false
// may be computed (a few batches) but are not delivered. With one
// available core it is the direct call.
func pipeUnitRows(us unitSource, from, to int64, fn func(i int64, pi, lo float64, m []float64) bool) error {
	if runtime.GOMAXPROCS(0) < 2 {
		return us.UnitRows(from, to, fn)
	}
	free := make(chan *rowBatch, pipeBatches)
	full := make(chan *rowBatch, pipeBatches)
	for range pipeBatches {
		free <- &rowBatch{}
	}
	var stop atomic.Bool
	errc := make(chan error, 1)
	go func() {
		var err error
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("estimate: computing sanitizer rows: panic: %v", p)
			}
			close(full)
			errc <- err
		}()
		b := <-free
		b.reset()
		err = us.UnitRows(from, to, func(i int64, pi, lo float64, m []float64) bool {
			if stop.Load() {
				return false
			}
			b.add(i, pi, lo, m)
			if len(b.i) == pipeBatchRows {
				full <- b
				b = <-free
				b.reset()
			}
			return true
		})
		if len(b.i) > 0 {
			full <- b
		}
	}()
	drained := false
	defer func() {
		if !drained { // fn panicked: let the producer finish and exit
			stop.Store(true)
			go func() {
				for b := range full {
					free <- b
				}
				<-errc
			}()
		}
	}()
	stopped := false
	for b := range full {
		start := 0
		for k := 0; k < len(b.i) && !stopped; k++ {
			if !fn(b.i[k], b.pi[k], b.lo[k], b.m[start:b.end[k]]) {
				stopped = true
				stop.Store(true)
			}
			start = b.end[k]
		}
		free <- b
	}
	drained = true
	return <-errc
}
