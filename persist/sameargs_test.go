package persist

import (
	"reflect"
	"testing"
	"time"
)

// TestSameArgsIsDeepEqual: the fast comparison of statement arguments answers as reflect.DeepEqual
// (but for no arguments, nil or empty alike).
func TestSameArgsIsDeepEqual(t *testing.T) {
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	s, s2 := "x", "x"
	lists := [][]any{
		nil, {}, {"a"}, {"b"}, {"a", int64(1)}, {"a", int64(2)}, {"a", 1}, {"a", int32(1)},
		{true}, {false}, {nil}, {(*string)(nil)}, {&s}, {&s2}, {at}, {at.Add(time.Nanosecond)},
		{[]byte("a")}, {[]byte("b")}, {[]string{"a"}}, {[]string{"a", "b"}}, {"a", "b", "c"},
		{int64(1), "a"}, {"1"}, {[]any{"a"}},
	}
	for _, a := range lists {
		for _, b := range lists {
			want := reflect.DeepEqual(a, b) || len(a) == 0 && len(b) == 0
			if got := sameArgs(a, b); got != want {
				t.Errorf("sameArgs(%#v, %#v) = %v, reflect.DeepEqual says %v", a, b, got, want)
			}
		}
	}
}
