package server

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/natterchat/natter/outbound/email"
	"github.com/natterchat/natter/persist"
)

// Budgets of emailed sign-in links, kept in Postgres like every sign-in budget so that replicas
// share them: per client address (a source asking for many addresses gets 429), and per
// address (someone's inbox is not flooded; over it, the answer stays the same 202 and nothing is
// sent).
const (
	magicMailSourceLimit   = 20
	magicMailSourceWindow  = 10 * time.Minute
	magicMailAddressLimit  = 5
	magicMailAddressWindow = time.Hour
)

// mailSendTimeout bounds an email sent on behalf of a request (a sign-in link, an invitation).
const mailSendTimeout = 30 * time.Second

// mailer is the server's email: the relay and the public URL links are built on.
type mailer struct {
	sender    *email.Sender
	publicURL string
	bySource  *keyedLimiter
	byAddress *keyedLimiter
}

// configureMail sets up email when cfg.Mail is set; it needs a public URL for its links.
func (s *Server) configureMail(cfg Config) error {
	if cfg.Mail == nil {
		return nil
	}
	public, err := ParsePublicURL(cfg.PublicURL)
	if cfg.PublicURL == "" || err != nil {
		return fmt.Errorf("email needs --public-url for the links it sends")
	}
	s.mail = &mailer{sender: cfg.Mail, publicURL: public,
		bySource: newKeyedLimiter(cfg.Store, "magic_link_mail_source", magicMailSourceLimit, magicMailSourceWindow,
			"too many sign-in links asked for from this address; wait a few minutes"),
		byAddress: newKeyedLimiter(cfg.Store, "magic_link_mail_address", magicMailAddressLimit, magicMailAddressWindow, "")}
	return nil
}

// mailMagicLink serves POST /api/auth/magic/request when email is configured: a sign-in link is
// emailed to an address that may sign in (persist.MagicLinkMailable), and every well-formed
// request within the source's budget gets the same 202, whether or not anything was sent. The
// email leaves after the answer, so the answer's timing does not tell either.
func (s *Server) mailMagicLink(w http.ResponseWriter, r *http.Request) {
	var req magicLinkRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	address := persist.NormalizeEmail(req.Email)
	if _, err := email.ParseFrom(address); err != nil || address != strings.TrimSpace(address) {
		s.writeError(w, r, persist.Invalid("email must be an address like name@example.com"))
		return
	}
	ctx := r.Context()
	if _, err := s.mail.bySource.allow(ctx, clientAddress(r)); err != nil {
		s.writeError(w, r, err)
		return
	}
	accepted := map[string]any{"accepted": true, "message": "if this address may sign in here, a sign-in link is on its way"}
	if _, err := s.mail.byAddress.allow(ctx, address); err != nil {
		if e, ok := persist.ErrorOf(err); ok && e.Code == persist.CodeRateLimited {
			writeJSON(w, http.StatusAccepted, accepted)
			return
		}
		s.writeError(w, r, err)
		return
	}
	token, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (string, error) {
		ok, err := tx.MagicLinkMailable(ctx, address)
		if err != nil || !ok {
			return "", err
		}
		return tx.MagicLinkCreate(ctx, address, req.DisplayName)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, accepted)
	if token == "" {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), mailSendTimeout)
		defer cancel()
		link := s.mail.publicURL + "/#token=" + url.QueryEscape(token)
		minutes := int(persist.MagicLinkLifetime / time.Minute)
		_, err := s.mail.sender.Send(ctx, email.Message{To: address, Subject: "Your Natter sign-in link",
			Text: fmt.Sprintf("Open this link to sign in to Natter:\n\n%s\n\nIt works once, for %d minutes. If you did not ask for it, ignore this email.\n", link, minutes),
			HTML: fmt.Sprintf(`<p>Open this link to sign in to Natter:</p><p><a href="%s">Sign in</a></p><p>It works once, for %d minutes. If you did not ask for it, ignore this email.</p>`,
				htmlAttr(link), minutes)})
		if err != nil {
			s.logger.Warn("sign-in link email failed", "error", err)
		}
	}()
}

// inviteEmailed is one address of an invite request and what became of its email.
type inviteEmailed struct {
	persist.Invite
	Email string `json:"email"`
	Sent  bool   `json:"sent"`
	Error string `json:"error,omitempty"`
}

// mailInvites mints one invite per address and emails each its link; the answer says, per
// address, whether the relay took the email. Tokens are not in it: each is in its email only.
func (s *Server) mailInvites(w http.ResponseWriter, r *http.Request, req inviteCreateRequest) {
	if s.mail == nil {
		s.writeError(w, r, persist.Errorf(persist.CodeNotImplemented, "emailing invites needs the server's email (--smtp-url)"))
		return
	}
	ctx := r.Context()
	ws := chi.URLParam(r, "workspace_id")
	type minted struct {
		invites   []persist.EmailInvite
		workspace string
	}
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (minted, error) {
		invs, err := tx.InviteCreateForEmails(ctx, callerOf(ctx).Actor(), ws, req.Role, req.ExpiresInHours, req.Emails)
		if err != nil {
			return minted{}, err
		}
		name, err := tx.WorkspaceName(ctx, ws)
		return minted{invs, name}, err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	inviter := callerOf(ctx).User.DisplayName
	out := make([]inviteEmailed, 0, len(res.invites))
	for _, inv := range res.invites {
		link := s.mail.publicURL + "/#invite=" + url.QueryEscape(inv.Token)
		sendCtx, cancel := context.WithTimeout(ctx, mailSendTimeout)
		_, err := s.mail.sender.Send(sendCtx, email.Message{To: inv.Email,
			Subject: fmt.Sprintf("%s invited you to %s on Natter", inviter, res.workspace),
			Text: fmt.Sprintf("%s invited you to join %s on Natter as a %s.\n\nJoin: %s\n\nSign in with this address (%s) when asked. The invitation works once and expires on %s.\n",
				inviter, res.workspace, inv.Role, link, inv.Email, inv.ExpiresAt.UTC().Format("2 January 2006 15:04 UTC")),
			HTML: fmt.Sprintf(`<p>%s invited you to join <b>%s</b> on Natter as a %s.</p><p><a href="%s">Join %s</a></p><p>Sign in with this address (%s) when asked. The invitation works once and expires on %s.</p>`,
				htmlText(inviter), htmlText(res.workspace), inv.Role, htmlAttr(link), htmlText(res.workspace), htmlText(inv.Email),
				inv.ExpiresAt.UTC().Format("2 January 2006 15:04 UTC"))})
		cancel()
		e := inviteEmailed{Invite: inv.Invite, Email: inv.Email, Sent: err == nil}
		e.Token = ""
		if err != nil {
			e.Error = err.Error()
			s.logger.Warn("invitation email failed", "invite_id", inv.ID, "error", err)
		}
		out = append(out, e)
	}
	writeJSON(w, http.StatusCreated, map[string]any{"invites": out})
}

// htmlText and htmlAttr escape text for an email's HTML part.
func htmlText(s string) string { return html.EscapeString(s) }
func htmlAttr(s string) string { return html.EscapeString(s) }
