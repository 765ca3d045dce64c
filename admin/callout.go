package admin

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/urfave/cli/v2"

	"github.com/natterchat/natter/streams"
)

// calloutFlags configure bot runtimes' access to an external NATS cluster through its
// auth_callout block (docs/deployment.md, nats.conf).
func calloutFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "nats-callout-issuer-seed", EnvVars: []string{"NATTER_NATS_CALLOUT_ISSUER_SEED"},
			Usage: "with --nats-url: the account nkey seed (SA…) whose public key is the cluster's auth_callout issuer; natter then admits bot runtimes (ccb_ tokens) to the cluster. A secret: prefer the environment variable"},
		&cli.StringFlag{Name: "nats-callout-account", EnvVars: []string{"NATTER_NATS_CALLOUT_ACCOUNT"}, Value: "NATTER",
			Usage: "the cluster account natter's own user is in and bots are placed in"},
		&cli.StringFlag{Name: "nats-callout-xkey-seed", EnvVars: []string{"NATTER_NATS_CALLOUT_XKEY_SEED"},
			Usage: "the curve nkey seed (SX…) whose public key is the auth_callout block's xkey, when the cluster encrypts its requests"},
		&cli.StringFlag{Name: "nats-system-url", EnvVars: []string{"NATTER_NATS_SYSTEM_URL"},
			Usage: "URL(s) with the credentials of a system-account user; lets natter disconnect a bot at once when its token is revoked or its membership ends (otherwise at its JWT's expiry)"},
		&cli.DurationFlag{Name: "nats-bot-ttl", EnvVars: []string{"NATTER_NATS_BOT_TTL"}, Value: 2 * time.Minute,
			Usage: "lifetime of the JWT a bot gets from the callout; the bot is checked again when it reconnects after it"},
	}
}

// calloutConfig is the validated configuration of the auth callout; issuer nil means off.
type calloutConfig struct {
	issuer    nkeys.KeyPair
	xkey      nkeys.KeyPair
	account   string
	systemURL string
	ttl       time.Duration
}

func readCalloutConfig(c *cli.Context, natsURL string) (calloutConfig, error) {
	cc := calloutConfig{account: c.String("nats-callout-account"), systemURL: c.String("nats-system-url"),
		ttl: c.Duration("nats-bot-ttl")}
	seed := c.String("nats-callout-issuer-seed")
	if seed == "" {
		for _, f := range []string{"nats-callout-xkey-seed", "nats-system-url"} {
			if c.String(f) != "" {
				return cc, configError(f, "needs --nats-callout-issuer-seed")
			}
		}
		return cc, nil
	}
	if natsURL == "" {
		return cc, configError("nats-callout-issuer-seed", "needs --nats-url: the embedded server admits bots itself (--nats-listen)")
	}
	if cc.systemURL != "" {
		if err := checkNATSURLs("nats-system-url", cc.systemURL); err != nil {
			return cc, err
		}
	}
	var err error
	if cc.issuer, err = streams.ParseSeed(seed, "the issuer seed"); err != nil {
		return cc, configError("nats-callout-issuer-seed", "%v", err)
	}
	if pub, _ := cc.issuer.PublicKey(); !nkeys.IsValidPublicAccountKey(pub) {
		return cc, configError("nats-callout-issuer-seed", "must be an account seed (starting SA)")
	}
	if x := c.String("nats-callout-xkey-seed"); x != "" {
		if cc.xkey, err = streams.ParseSeed(x, "the xkey seed"); err != nil {
			return cc, configError("nats-callout-xkey-seed", "%v", err)
		}
		if pub, _ := cc.xkey.PublicKey(); !nkeys.IsValidPublicCurveKey(pub) {
			return cc, configError("nats-callout-xkey-seed", "must be a curve seed (starting SX)")
		}
	}
	if cc.account == "" {
		return cc, configError("nats-callout-account", "must name the account natter's user is in")
	}
	if cc.ttl < time.Second || cc.ttl > 24*time.Hour {
		return cc, configError("nats-bot-ttl", "must be from 1s to 24h, not %s", cc.ttl)
	}
	return cc, nil
}

// start connects to the system account when configured and returns the callout's
// configuration for the system's assembly (nil with the callout off); stop closes the system
// connection.
func (cc calloutConfig) start(ctx context.Context) (callout *streams.AuthCalloutConfig, stop func(), err error) {
	stop = func() {}
	if cc.issuer == nil {
		return nil, stop, nil
	}
	var system *nats.Conn
	if cc.systemURL != "" {
		if system, err = streams.ConnectURL(ctx, cc.systemURL, "natter-system"); err != nil {
			return nil, stop, err
		}
		stop = system.Close
	}
	return &streams.AuthCalloutConfig{Issuer: cc.issuer, Account: cc.account, XKey: cc.xkey, System: system, TTL: cc.ttl}, stop, nil
}
