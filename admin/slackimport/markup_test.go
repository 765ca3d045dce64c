package slackimport

import "testing"

type fakeNames map[string]string

func (f fakeNames) mention(id string) string     { return f["@"+id] }
func (f fakeNames) channelName(id string) string { return f["#"+id] }

// TestRewrite: every kind of Slack markup the issue names becomes Natter text.
func TestRewrite(t *testing.T) {
	t.Parallel()
	names := fakeNames{"@U1": "@ann", "#C1": "general"}
	for in, want := range map[string]string{
		"hi <@U1>!":                                 "hi @ann!",
		"hi <@U9|bob>":                              "hi @bob",
		"hi <@U9>":                                  "hi @U9",
		"see <#C1|old-name> and <#C9|elsewhere>":    "see #general and #elsewhere",
		"<#C9>":                                     "#C9",
		"<https://example.com|the site> now":        "[the site](https://example.com) now",
		"<https://example.com>":                     "https://example.com",
		"<http://example.com|example.com>":          "http://example.com",
		"<https://x.test/?a=1&amp;b=2|a &amp; b>":   "[a & b](https://x.test/?a=1&b=2)",
		"<mailto:a@b.test|a@b.test>":                "a@b.test",
		"<!here> <!channel|channel> <!everyone>":    "@here @channel @everyone",
		"<!subteam^S1|@devs> look":                  "@devs look",
		"<!date^1392734382^{date}|Feb 18, 2014> ok": "Feb 18, 2014 ok",
		"1 &lt; 2 &amp;&amp; 3 &gt; 2":              "1 < 2 && 3 > 2",
		"a lone < stays":                            "a lone < stays",
		"&amp;lt; is not unescaped twice":           "&lt; is not unescaped twice",
	} {
		if got := rewrite(in, names); got != want {
			t.Errorf("rewrite(%q) = %q, want %q", in, got, want)
		}
	}
}
