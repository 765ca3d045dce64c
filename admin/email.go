package admin

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/natterchat/natter/outbound/email"
	"github.com/natterchat/natter/server"
)

// emailFlags configure the SMTP relay: email is off unless --smtp-url is set.
func emailFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "smtp-url", EnvVars: []string{"NATTER_SMTP_URL"},
			Usage: "the mail relay: smtp://[user[:password]@]host[:587] (STARTTLS required), smtps://…:465 (implicit TLS), or smtp://localhost:25?tls=none for a relay on loopback; empty: no email"},
		&cli.StringFlag{Name: "smtp-password-file", EnvVars: []string{"NATTER_SMTP_PASSWORD_FILE"},
			Usage: "a file holding the relay password (one trailing newline dropped), instead of a password in --smtp-url"},
		&cli.StringFlag{Name: "email-from", EnvVars: []string{"NATTER_EMAIL_FROM"},
			Usage: "the sender of every email, such as \"Natter <chat@example.com>\" (required with --smtp-url)"},
	}
}

// readEmailConfig returns the relay of --smtp-url, or nil when email is off. A public URL is
// required with it, for the links emails carry.
func readEmailConfig(c *cli.Context, needPublicURL bool) (*email.Sender, error) {
	raw := c.String("smtp-url")
	if raw == "" {
		for _, f := range []string{"smtp-password-file", "email-from"} {
			if c.String(f) != "" {
				return nil, configError(f, "needs --smtp-url")
			}
		}
		return nil, nil
	}
	if c.String("email-from") == "" {
		return nil, configError("email-from", "is required with --smtp-url")
	}
	if needPublicURL {
		if p := c.String("public-url"); p == "" {
			return nil, configError("public-url", "is required with --smtp-url: emails link to the client")
		} else if _, err := server.ParsePublicURL(p); err != nil {
			return nil, usageErrorf("invalid configuration: %w", err)
		}
	}
	password := ""
	if f := c.String("smtp-password-file"); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, configError("smtp-password-file", "cannot be read: %v", err)
		}
		password = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		if password == "" {
			return nil, configError("smtp-password-file", "is empty")
		}
	}
	s, err := email.New(email.Config{URL: raw, Password: password, From: c.String("email-from")})
	if err != nil {
		return nil, usageErrorf("invalid configuration: %w", err) // the error names the flag
	}
	return s, nil
}

func emailCommand() *cli.Command {
	return &cli.Command{
		Name:  "email",
		Usage: "email over SMTP",
		Subcommands: []*cli.Command{{
			Name:  "test",
			Usage: "send one email through the relay of --smtp-url and report its answer",
			Flags: append(emailFlags(), &cli.StringFlag{Name: "to", Required: true, Usage: "the recipient's address"}, jsonFlag()),
			Action: func(c *cli.Context) error {
				s, err := readEmailConfig(c, false)
				if err != nil {
					return err
				}
				if s == nil {
					return configError("smtp-url", "is required")
				}
				to := strings.TrimSpace(c.String("to"))
				if _, err := email.ParseFrom(to); err != nil {
					return configError("to", "must be an email address")
				}
				ctx, cancel := context.WithTimeout(c.Context, 45*time.Second)
				defer cancel()
				reply, err := s.Send(ctx, email.Message{To: to, Subject: "Natter test email",
					Text: fmt.Sprintf("This is a test email from Natter, sent %s by natter admin email test.\n", time.Now().UTC().Format(time.RFC1123))})
				if err != nil {
					return fmt.Errorf("the test email was not sent: %w", err)
				}
				return report(c, map[string]any{"to": to, "reply": reply}, "sent to %s; the relay answered: %s", to, reply)
			},
		}},
	}
}
