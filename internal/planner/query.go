package planner

import (
	"strconv"
	"strings"

	"github.com/pwsd/pwsd/internal/checks"
)

// ParsePlanQuery reads a PlanRequest from flat query parameters named as
// its JSON fields (get returns "" for an absent parameter; for instance
// url.Values.Get): epsilon, delta, scheme, threshold, power, probabilities
// (comma-separated), method, g, estimator, distribution, alpha, n, a, b,
// sweep_from, sweep_to, sweep_points. It only parses; Plan validates. A
// parameter that is not a number yields a *ValidationError naming it. Sweep
// is left false: the caller sets it for the NRMSE plot.
func ParsePlanQuery(get func(name string) string) (PlanRequest, error) {
	var ve checks.Errors
	float := func(name string) float64 {
		s := strings.TrimSpace(get(name))
		if s == "" {
			return 0
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			ve.Add(name, "must be a number")
		}
		return v
	}
	integer := func(name string) int64 {
		s := strings.TrimSpace(get(name))
		if s == "" {
			return 0
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			ve.Add(name, "must be an integer")
		}
		return v
	}
	r := PlanRequest{
		Epsilon:      float("epsilon"),
		Delta:        float("delta"),
		Scheme:       strings.TrimSpace(get("scheme")),
		Threshold:    float("threshold"),
		Power:        float("power"),
		Method:       strings.TrimSpace(get("method")),
		G:            strings.TrimSpace(get("g")),
		Estimator:    strings.TrimSpace(get("estimator")),
		Distribution: strings.TrimSpace(get("distribution")),
		Alpha:        float("alpha"),
		N:            integer("n"),
		A:            integer("a"),
		B:            integer("b"),
		SweepFrom:    float("sweep_from"),
		SweepTo:      float("sweep_to"),
		SweepPoints:  int(integer("sweep_points")),
	}
	if s := strings.TrimSpace(get("probabilities")); s != "" {
		for j, part := range strings.Split(s, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(part), 64)
			if err != nil {
				ve.Add("probabilities["+strconv.Itoa(j)+"]", "must be a number")
				continue
			}
			r.Probabilities = append(r.Probabilities, v)
		}
	}
	if len(ve) > 0 {
		return PlanRequest{}, ve
	}
	return r, nil
}
