package benchdata

import (
	"math/rand/v2"
	"strings"
)

// vocabulary is the words of seeded messages, most frequent first: bodies draw them with a
// Zipf law, as chat does, so the first words are found in a large share of messages and the
// last in very few. English stop words ("the", "and") are left out: full-text search drops them.
var vocabulary = strings.Fields(`
deploy review meeting today build release issue please thanks update test customer
tomorrow team fix branch merge production ticket morning design data question server
error client feature change week call docs check looks agree version config database
working project plan status sprint support report user afternoon deadline staging
monitor alert latency incident rollback patch backend frontend mobile api endpoint
schema migration index query cache queue worker cluster node pod container image
pipeline runner job script logs metrics dashboard graph chart budget invoice contract
sales marketing launch campaign roadmap quarter goals hiring interview candidate offer
onboarding laptop access password account permission role admin policy security audit
compliance legal privacy vendor partner contractor lunch coffee holiday vacation remote
office travel flight hotel conference talk slides demo prototype mockup wireframe
feedback survey research analysis experiment hypothesis metric retention churn growth
revenue pricing discount renewal upgrade downgrade trial signup login session token
webhook integration plugin extension library framework package dependency upgrade
compiler linter formatter benchmark profile memory leak crash panic timeout retry
backoff throttle limit quota storage bucket upload download backup restore snapshot
replica primary failover region zone network firewall proxy gateway certificate
domain dns email notification push message channel thread reaction emoji mention
search filter sort page scroll button modal dropdown tooltip sidebar header footer
layout theme color font icon logo brand copy translation locale timezone calendar
schedule reminder agenda minutes notes summary decision action owner blocker risk
estimate scope priority backlog epic story task subtask bug regression flaky green
red yellow approved rejected pending draft published archived deleted restored
weekly monthly yearly daily standup retro planning grooming demo kickoff sync
offsite allhands townhall newsletter announcement welcome congrats birthday anniversary
pizza cake donuts tacos sushi burgers salad soup sandwich breakfast dinner snacks
keyboard monitor mouse headset webcam microphone speaker charger cable adapter dongle
printer scanner projector whiteboard marker notebook pen sticky chair desk
kubernetes terraform ansible docker postgres redis kafka nats grafana prometheus
elastic nginx envoy istio linkerd vault consul nomad jenkins circleci github gitlab
rust golang python typescript javascript java kotlin swift ruby elixir haskell scala
refactor rewrite cleanup deprecate remove rename extract inline optimize simplify
document annotate comment explain clarify confirm verify validate reproduce investigate
escalate assign reassign triage prioritize schedule postpone cancel reopen close resolve
zebra quokka narwhal axolotl pangolin capybara okapi tapir wombat platypus
`)

// body draws a message of 4 to 20 words.
func body(r *rand.Rand, zipf *rand.Zipf) string {
	n := 4 + r.IntN(17)
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(vocabulary[zipf.Uint64()])
	}
	return b.String()
}

// wordZipf draws vocabulary indexes, rank 0 most often.
func wordZipf(r *rand.Rand) *rand.Zipf {
	return rand.NewZipf(r, 1.07, 2, uint64(len(vocabulary)-1))
}
