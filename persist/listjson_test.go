package persist_test

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/natterchat/natter/persist"
)

// TestListingJSONMatchesEncodingJSON: the listings' hand-written encoders render every value as
// encoding/json does, byte for byte. Each field of each type is filled by reflection, so a field
// added to Channel, PublicUser, DirectoryMember or MemberPage without its line in the encoder
// (or with another name, order or omitempty) fails here; each is also left empty or nil in about
// a third of the values, and the strings include every case encoding/json escapes.
func TestListingJSONMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 34))
	same := func(t *testing.T, what string, got []byte, v any) {
		t.Helper()
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("%s:\n got %s\nwant %s", what, got, want)
		}
	}
	for i := range 500 {
		var c persist.Channel
		fill(r, reflect.ValueOf(&c).Elem())
		same(t, "channel", c.AppendJSON(nil), c)

		list := make([]persist.Channel, r.IntN(4))
		for k := range list {
			fill(r, reflect.ValueOf(&list[k]).Elem())
		}
		same(t, "channel list", persist.AppendChannelsJSON([]byte{}, list), map[string]any{"channels": list})

		var page persist.MemberPage[persist.DirectoryMember]
		fill(r, reflect.ValueOf(&page).Elem())
		same(t, "directory page", persist.AppendDirectoryJSON(nil, &page), page)
		if i == 0 {
			page.Members = nil
			same(t, "directory page without members", persist.AppendDirectoryJSON(nil, &page), page)
		}
	}
}

// fieldStrings holds what a field may hold: encoding/json escapes <, >, &, ", \, control characters,
// U+2028, U+2029 and invalid UTF-8, and writes the rest (other valid UTF-8, DEL) as it is.
var fieldStrings = []string{"", "general", "chn_01m8et6r6a8mnys1ksmm5709xv", "Grace Hopper", "a <b> & c", `say "hi" \ bye`,
	"tab\there\nnew line\x01\x1f", "Zoë 😀 中文", "line\u2028sep", "para\u2029sep", "bad \xff\xfe utf-8", "\u007f del", "�"}

// fill sets every exported field of v, recursively, to a value drawn from r: fieldStrings,
// integers of every size and sign, times of several zones and precisions, pointers and slices
// nil, empty or filled.
func fill(r *rand.Rand, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(fieldStrings[r.IntN(len(fieldStrings))])
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int, reflect.Int64:
		ints := []int64{0, 1, -1, 42, 1 << 53, -(1 << 62), r.Int64()}
		v.SetInt(ints[r.IntN(len(ints))])
	case reflect.Pointer:
		if r.IntN(3) == 0 {
			v.SetZero()
			return
		}
		p := reflect.New(v.Type().Elem())
		fill(r, p.Elem())
		v.Set(p)
	case reflect.Slice:
		if r.IntN(3) == 0 {
			v.SetZero()
			return
		}
		s := reflect.MakeSlice(v.Type(), r.IntN(3), r.IntN(3)+3)
		for i := range s.Len() {
			fill(r, s.Index(i))
		}
		v.Set(s)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			times := []time.Time{{}, time.Date(2026, 11, 27, 15, 4, 5, 0, time.UTC),
				time.Date(2025, 1, 2, 3, 4, 5, 123456789, time.UTC), time.Date(2026, 6, 1, 0, 0, 0, 120000000, time.FixedZone("", -5*3600-30*60)),
				time.Unix(r.Int64N(4e9), r.Int64N(1e9)).UTC()}
			v.Set(reflect.ValueOf(times[r.IntN(len(times))]))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(r, v.Field(i))
			}
		}
	default:
		panic("fill: a field of kind " + v.Kind().String() + " the encoders' test does not draw yet")
	}
}
