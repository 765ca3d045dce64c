package web_test

import (
	"context"
	"fmt"
	"sort"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/profiler"
	"github.com/chromedp/chromedp"

	"github.com/natterchat/natter/persist"
)

func TestZZProfileFirstVisit(t *testing.T) {
	e := newEnv(t)
	ana := e.person(t, "Ana Lima")
	var ws struct{ Workspace persist.Workspace }
	e.api(t, ana, "POST", "/api/workspaces", map[string]string{"name": "Bench"}, &ws)
	var general struct{ Channel persist.Channel }
	e.api(t, ana, "POST", "/api/workspaces/"+ws.Workspace.ID+"/channels", map[string]string{"name": "general"}, &general)
	for i := range 100 {
		e.post(t, ana, general.Channel.ID, fmt.Sprintf("Message %d with a little **markdown** and a link https://example.com/%d", i, i))
	}
	br := newBrowser(t, e)
	tab := br.tab(t, ana)
	var prof *profiler.Profile
	do(t, tab, "start", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := chromedp.Call(ctx, profiler.Enable, cdp.Empty{}); err != nil {
			return err
		}
		_, _ = chromedp.Call(ctx, profiler.SetSamplingInterval, profiler.SetSamplingIntervalParams{Interval: 200})
		_, err := chromedp.Call(ctx, profiler.Start, cdp.Empty{})
		return err
	}))
	do(t, tab, "open", chromedp.Navigate(e.URL+"/"))
	waitFor(t, tab, "painted", `performance.getEntriesByName('natter-channel-painted').length`)
	do(t, tab, "stop", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		res, err := chromedp.Call(ctx, profiler.Stop, cdp.Empty{})
		prof = res.Profile
		return err
	}))
	self := map[string]float64{}
	byID := map[int64]*profiler.ProfileNode{}
	for _, n := range prof.Nodes {
		byID[n.ID] = n
	}
	for i, id := range prof.Samples {
		n := byID[id]
		key := fmt.Sprintf("%s %s:%d", n.CallFrame.FunctionName, n.CallFrame.URL, n.CallFrame.LineNumber)
		self[key] += float64(prof.TimeDeltas[i]) / 1000
	}
	type kv struct {
		k string
		v float64
	}
	var all []kv
	for k, v := range self {
		all = append(all, kv{k, v})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v > all[j].v })
	for _, x := range all[:40] {
		t.Logf("%7.1f ms %s", x.v, x.k)
	}
	t.Logf("painted %v", eval[float64](t, tab, `performance.getEntriesByName('natter-channel-painted')[0].startTime`))
}
