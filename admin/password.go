package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/server/passwordhash"
)

// maxSecretInput bounds what `password set` reads from a pipe.
const maxSecretInput = 64 << 10

func passwordCommand() *cli.Command {
	emailFlag := func() cli.Flag {
		return &cli.StringFlag{Name: "email", EnvVars: []string{"NATTER_EMAIL"}, Required: true, Usage: "the person's email address"}
	}
	return &cli.Command{
		Name:  "password",
		Usage: "password sign-in for one account (served with --password-auth); there is no self-registration",
		Subcommands: []*cli.Command{{
			Name: "set",
			Usage: "set (or replace) a person's password, enrolling the account; the secret is read from a prompt, " +
				"or from stdin when it is not a terminal (8 to 256 characters; one trailing newline is dropped)",
			Flags: adminFlags(emailFlag()),
			Action: func(c *cli.Context) error {
				secret, err := readSecret(c)
				if err != nil {
					return err
				}
				if err := passwordhash.Check(secret); err != nil {
					return fmt.Errorf("the password %w", err)
				}
				hasher, err := passwordhash.New(passwordhash.Config{})
				if err != nil {
					return err
				}
				hash, err := hasher.Hash(c.Context, secret)
				if err != nil {
					return err
				}
				return withStore(c, func(ctx context.Context, store *persist.Store) error {
					u, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.User, error) {
						return tx.PasswordSet(ctx, c.String("email"), hash)
					})
					if e, ok := persist.ErrorOf(err); ok && e.Code == persist.CodeNotFound {
						return fmt.Errorf("no account has the email %s; let the person in first with "+
							"natter admin member add --workspace <slug> --email %s", c.String("email"), c.String("email"))
					}
					if err != nil {
						return err
					}
					return report(c, map[string]any{"user_id": u.ID, "email": u.Email, "password": "set"},
						"password set for %s (%s)", u.Email, u.ID)
				})
			},
		}, {
			Name:  "clear",
			Usage: "remove a person's password, so that password sign-in no longer reaches the account",
			Flags: adminFlags(emailFlag()),
			Action: func(c *cli.Context) error {
				return withStore(c, func(ctx context.Context, store *persist.Store) error {
					u, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.User, error) {
						return tx.PasswordClear(ctx, c.String("email"))
					})
					if err != nil {
						return err
					}
					return report(c, map[string]any{"user_id": u.ID, "email": u.Email, "password": "cleared"},
						"password cleared for %s (%s)", u.Email, u.ID)
				})
			},
		}},
	}
}

// readSecret reads a new password so that it never appears in a process listing or a shell
// history: from a terminal, at a prompt without echo, twice; otherwise the whole of stdin, less
// one trailing newline.
func readSecret(c *cli.Context) (string, error) {
	if f, ok := c.App.Reader.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		ask := func(prompt string) (string, error) {
			fmt.Fprint(c.App.ErrWriter, prompt)
			b, err := term.ReadPassword(int(f.Fd()))
			fmt.Fprintln(c.App.ErrWriter)
			return string(b), err
		}
		first, err := ask("New password: ")
		if err != nil {
			return "", err
		}
		again, err := ask("Repeat it: ")
		if err != nil {
			return "", err
		}
		if first != again {
			return "", errors.New("the two entries differ; nothing was changed")
		}
		return first, nil
	}
	raw, err := io.ReadAll(io.LimitReader(c.App.Reader, maxSecretInput+1))
	if err != nil {
		return "", fmt.Errorf("read the password from stdin: %w", err)
	}
	if len(raw) > maxSecretInput {
		return "", errors.New("stdin holds more than a password")
	}
	s := strings.TrimSuffix(string(raw), "\n")
	return strings.TrimSuffix(s, "\r"), nil
}
