package sanitize

import (
	"context"
	"fmt"
	"slices"
)

// breakPoints returns the global token partition of rows 1..n: the sorted,
// distinct break points 0 = x_0 < x_1 < ... < x_K = n of all their pieces.
// Every row's piece (Lo, Hi] is a union of consecutive global tokens
// (x_{k-1}, x_k] on which the row's density is constant, so a row puts
// P * (x_k - x_{k-1}) / (Hi - Lo) on each (Row.MassOn computes it). A
// released value v belongs to the token (x_{k-1}, x_k] with
// x_{k-1} < v <= x_k. For MethodDiscrete the tokens are the integers
// (j-1, j]; for MethodMaxSeparation each row adds at most three points (its
// b, c and i), so there are at most 3n + 1. Cost O(n L) time, O(n) memory.
func (t *Table) breakPoints(n int64) ([]float64, error) {
	if err := checkFreq(n); err != nil {
		return nil, fmt.Errorf("sanitize: break points: %w", err)
	}
	if t.m == MethodDiscrete {
		pts := make([]float64, n+1)
		for k := range pts {
			pts[k] = float64(k)
		}
		return pts, nil
	}
	pts := []float64{0}
	cu := t.cursorAt(rowZero())
	cu.detect = false // explicit rows: they equal the shifted ones exactly
	if err := t.walk(context.Background(), cu, 1, n, func(*rowState, int64) bool {
		pts = append(pts, cu.sc.newPts...) // the points the step to this row introduced
		return true
	}); err != nil {
		return nil, fmt.Errorf("sanitize: break points: %w", err)
	}
	slices.Sort(pts)
	return slices.Compact(pts), nil
}
