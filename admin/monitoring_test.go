package admin_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The monitoring kit shipped in deploy/: Prometheus alert rules (with their unit tests) and a
// Grafana dashboard.
const (
	alertRules     = "../deploy/prometheus/natter-alerts.yml"
	alertRuleTests = "../deploy/prometheus/natter-alerts.test.yml"
	dashboard      = "../deploy/grafana/natter-dashboard.json"
)

// TestAlertRules runs promtool on the alert rules: they parse, and their unit tests (an alert
// fires on a failing replica's series, stays quiet on a healthy one) pass.
func TestAlertRules(t *testing.T) {
	t.Parallel()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed (Debian: apt-get install prometheus; .ci/run installs it): the rules are not checked")
	}
	for _, args := range [][]string{{"check", "rules", alertRules}, {"test", "rules", alertRuleTests}} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		require.NoError(t, err, "promtool %v:\n%s", args, out)
	}
}

// TestMonitoringSeriesExist: every natter_ series the alert rules and the dashboard query is one
// a running server exposes on --metrics-addr, so no panel or alert watches a name that does not
// exist.
func TestMonitoringSeriesExist(t *testing.T) {
	t.Parallel()
	api, metrics := startWithMetrics(t)
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(api + "/api/me") // a request, so the HTTP series have a child
	require.NoError(t, err)
	resp.Body.Close()
	resp, err = client.Get(metrics)
	require.NoError(t, err)
	scrape, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	exposed := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^(natter_[a-z_]+)[{ ]`).FindAllStringSubmatch(string(scrape), -1) {
		exposed[m[1]] = true
	}

	rules, err := os.ReadFile(alertRules)
	require.NoError(t, err)
	raw, err := os.ReadFile(dashboard)
	require.NoError(t, err)
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	require.NoError(t, json.Unmarshal(raw, &dash), "the dashboard is JSON")
	require.NotEmpty(t, dash.Panels)
	queried := string(rules)
	for _, p := range dash.Panels {
		require.NotEmpty(t, p.Targets, "panel %q queries something", p.Title)
		for _, target := range p.Targets {
			queried += "\n" + target.Expr
		}
	}
	names := regexp.MustCompile(`natter_[a-z_]+`).FindAllString(queried, -1)
	require.NotEmpty(t, names)
	for _, name := range names {
		require.True(t, exposed[name], "%s is queried but not exposed", name)
	}
}
