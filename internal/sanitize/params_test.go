package sanitize

import (
	"reflect"
	"testing"
)

// TestParseKey: ParseKey gives back the parameters Key wrote, for every
// scheme and method (the oracle: Key of the parsed parameters is the key,
// and the parameters are those that made it), and refuses every string Key
// does not write: another kind, a missing, extra or reordered field, a
// number in a form Key does not write, parameters that fail validation.
func TestParseKey(t *testing.T) {
	t.Parallel()
	mustP := func(eps, delta float64) Privacy {
		p, err := NewPrivacy(eps, delta)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	mustS := func(scheme Scheme, tau, power float64, qs []float64) Sampling {
		s, err := NewSampling(scheme, tau, power, qs)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tc := range []struct {
		p Privacy
		s Sampling
		m Method
	}{
		{mustP(0.1, 1e-6), mustS(SchemePPSWOR, 1e-4, 1, nil), MethodMaxSeparation},
		{mustP(1, 1e-9), mustS(SchemePriority, 0.25, 1.5, nil), MethodDiscrete},
		{mustP(3.7, 1), mustS(SchemeNone, 0, 0, nil), MethodDiscrete},
		{mustP(0.5, 1e-6), mustS(SchemeCustom, 0, 0, []float64{0.1, 0.1, 0.30000000000000004, 1}), MethodMaxSeparation},
	} {
		key := Key("kept", tc.p, tc.s, tc.m)
		p, s, m, err := ParseKey("kept", key)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if p != tc.p || !reflect.DeepEqual(s, tc.s) || m != tc.m {
			t.Fatalf("%s: parsed %+v %+v %q, want %+v %+v %q", key, p, s, m, tc.p, tc.s, tc.m)
		}
	}
	for _, key := range []string{
		"",
		"kept",
		"chunk|eps=0.1|delta=1e-06|scheme=ppswor|tau=0.0001|p=1|method=discrete",        // another kind
		"kept|eps=0.1|delta=1e-06|scheme=ppswor|tau=0.0001|p=1",                         // no method
		"kept|eps=0.1|delta=1e-06|scheme=ppswor|tau=0.0001|p=1|method=discrete|x=1",     // a further part
		"kept|eps=0.1|delta=1e-06|scheme=ppswor|tau=0.0001|p=1|method=discrete|",        // an empty one
		"kept|delta=1e-06|eps=0.1|scheme=ppswor|tau=0.0001|p=1|method=discrete",         // reordered
		"kept|eps=0.10|delta=1e-06|scheme=ppswor|tau=0.0001|p=1|method=discrete",        // not canonical
		"kept|eps=0.1|delta=1e-06|scheme=ppswor|tau=0.0001|p=0|method=discrete",         // p=0 means 1: not canonical
		"kept|eps=-1|delta=1e-06|scheme=ppswor|tau=0.0001|p=1|method=discrete",          // invalid epsilon
		"kept|eps=0.1|delta=2|scheme=ppswor|tau=0.0001|p=1|method=discrete",             // invalid delta
		"kept|eps=0.1|delta=1e-06|scheme=ppswor|tau=x|p=1|method=discrete",              // not a number
		"kept|eps=0.1|delta=1e-06|scheme=bernoulli|method=discrete",                     // unknown scheme
		"kept|eps=0.1|delta=1e-06|scheme=none|method=alg6",                              // unknown method
		"kept|eps=0.1|delta=1e-06|scheme=custom|q=0.5,0.25|method=discrete",             // decreasing q
		"kept|eps=0.1|delta=1e-06|scheme=none|tau=0.0001|p=1|method=discrete",           // tau without a scheme using it
		"kept|eps=0.1|delta=1e-06|scheme=ppswor|tau=0.0001|p=1|method=discrete|eps=0.1", // a repeat
	} {
		if p, s, m, err := ParseKey("kept", key); err == nil {
			t.Errorf("%q parsed as %+v %+v %q, want an error", key, p, s, m)
		}
	}
}
