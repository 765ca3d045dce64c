package slackimport

import (
	"strings"
	"testing"
)

type fakeNames map[string]string

func (f fakeNames) mention(id string) string     { return f["@"+id] }
func (f fakeNames) channelName(id string) string { return f["#"+id] }

// TestRewrite: every kind of Slack markup the issue names becomes Natter text.
func TestRewrite(t *testing.T) {
	t.Parallel()
	names := fakeNames{"@U1": "@ann", "#C1": "general"}
	for in, want := range map[string]string{
		"hi <@U1>!":                                       "hi @ann!",
		"hi <@U9|bob>":                                    "hi @bob",
		"hi <@U9>":                                        "hi @U9",
		"see <#C1|old-name> and <#C9|elsewhere>":          "see #general and #elsewhere",
		"<#C9>":                                           "#C9",
		"<https://example.com|the site> now":              "[the site](https://example.com) now",
		"<https://example.com>":                           "https://example.com",
		"<http://example.com|example.com>":                "http://example.com",
		"<https://x.test/?a=1&amp;b=2|a &amp; b>":         "[a & b](https://x.test/?a=1&b=2)",
		"<mailto:a@b.test|a@b.test>":                      "a@b.test",
		"<!here> <!channel|channel> <!everyone>":          "@here @channel @everyone",
		"<!subteam^S1|@devs> look":                        "@devs look",
		"<!date^1392734382^{date}|Feb 18, 2014> ok":       "Feb 18, 2014 ok",
		"1 &lt; 2 &amp;&amp; 3 &gt; 2":                    "1 < 2 && 3 > 2",
		"a lone < stays":                                  "a lone < stays",
		"&amp;lt; is not unescaped twice":                 "&lt; is not unescaped twice",
		"*bold* and ~gone~ and _it_":                      "**bold** and ~~gone~~ and _it_",
		"(*a b*), *<@U1>*!":                               "(**a b**), **@ann**!",
		"2*3*4 and a * b * c":                             "2*3*4 and a * b * c",
		"*no\nclose* here":                                "*no\nclose* here",
		"`*code*` and ```\n*block*\n``` *yes*":            "`*code*` and ```\n*block*\n``` **yes**",
		"<https://x.test/*a*|*label*>":                    "[*label*](https://x.test/*a*)",
		"_*both*_ ~*x*~":                                  "_**both**_ ~~**x**~~",
		"**already** stays":                               "**already** stays",
		":tada: shipped :+1::skin-tone-3: :party-parrot:": "🎉 shipped 👍🏼 :party-parrot:",
		"`:tada:` <https://x.test/:tada:|:tada:>":         "`:tada:` [:tada:](https://x.test/:tada:)",
		"10:30:00 a:b:c :tada::tada:, :fire:":             "10:30:00 a:b:c 🎉🎉, 🔥",
		"(*:fire:*) :heart::skin-tone-2: :tada":           "(**🔥**) ❤️ :tada",
	} {
		if got := rewrite(in, names); got != want {
			t.Errorf("rewrite(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzEmphasis: the rewrite only ever doubles markers; every other byte stays where it was.
func FuzzEmphasis(f *testing.F) {
	for _, s := range []string{"*a* ~b~", "`*`*x*", "<*|*>*y*", "***", "* *", "\x00*<a>*", "```*``*`*"} {
		f.Add(s)
	}
	strip := strings.NewReplacer("*", "", "~", "")
	f.Fuzz(func(t *testing.T, in string) {
		out := emphasis(in)
		if strip.Replace(out) != strip.Replace(in) {
			t.Fatalf("emphasis(%q) = %q changed more than markers", in, out)
		}
	})
}
