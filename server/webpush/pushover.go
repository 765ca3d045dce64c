package webpush

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/natterchat/natter/persist"
)

// DefaultPushoverAPI is Pushover's message API.
const DefaultPushoverAPI = "https://api.pushover.net/1/messages.json"

// maxPushoverTitle is Pushover's limit on a title, in characters.
const maxPushoverTitle = 250

// ValidPushoverToken reports whether s has the shape of a Pushover application token: 30
// letters and digits.
func ValidPushoverToken(s string) bool {
	if len(s) != 30 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// deliverPushover is deliver for a person's Pushover account: the same re-check of the message
// (and of their Pushover settings and backoff), one call to the message API through the push
// client (its address policy, no proxy, no redirects, the send timeout), and the same backoff
// schedule after a failure.
func (d *Deliverer) deliverPushover(ctx context.Context, p Push) Outcome {
	store := d.cfg.Store
	type check struct {
		send   persist.PushoverSend
		reason string
	}
	c, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (check, error) {
		s, reason, err := tx.PushoverSendCheck(ctx, p.UserID, p.MessageID)
		return check{s, reason}, err
	})
	if err != nil {
		d.logger.Warn("pushover re-check failed; dropped", "workspace_id", p.WorkspaceID, "message_id", p.MessageID,
			"user_id", p.UserID, "error", err)
		return Outcome{Dropped: "check_failed"}
	}
	if c.reason != "" {
		d.logger.Info("pushover dropped", "reason", c.reason, "workspace_id", p.WorkspaceID, "message_id", p.MessageID,
			"user_id", p.UserID)
		return Outcome{Dropped: c.reason}
	}
	status, wait, sendErr := d.sendPushover(ctx, p, c.send)
	o := Outcome{Status: status}
	err = store.WithTx(context.WithoutCancel(ctx), func(tx *persist.Tx) error {
		if sendErr == nil {
			o.Result = "delivered"
			return tx.PushoverDelivered(ctx, p.UserID)
		}
		o.Result = "failed"
		until, err := tx.PushoverFailed(ctx, p.UserID, wait(tx.Now()))
		o.BackoffUntil = until
		return err
	})
	if err != nil {
		d.logger.Warn("pushover outcome not recorded", "user_id", p.UserID, "error", err)
	}
	if o.Result == "failed" {
		d.logger.Warn("pushover failed; backed off", "status", status, "user_id", p.UserID, "backoff_until", o.BackoffUntil,
			"error", sendErr)
	}
	return o
}

// sendPushover posts one notification to the message API. The title is the push's; the body is
// the message as it reads now, cut like a web push body; a link to the conversation is added
// when the server's public https URL is known. It returns the API's status, a function of "now"
// giving the wait a Retry-After asks for, and an error unless Pushover accepted the message
// (2xx with status 1). Neither the application token nor the user key appears in errors.
func (d *Deliverer) sendPushover(ctx context.Context, p Push, s persist.PushoverSend) (int, func(time.Time) time.Duration, error) {
	none := func(time.Time) time.Duration { return 0 }
	message := truncate(s.Body, MaxBodyChars)
	if strings.TrimSpace(message) == "" {
		message = "(no text)" // Pushover refuses an empty message
	}
	form := url.Values{"token": {d.cfg.PushoverToken}, "user": {s.UserKey}, "title": {truncate(p.Title, maxPushoverTitle)},
		"message": {message}}
	if base, ok := strings.CutPrefix(d.cfg.Subscriber, "https://"); ok {
		form.Set("url", "https://"+strings.TrimRight(base, "/")+p.URL)
		form.Set("url_title", "Open in Natter")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.cfg.PushoverAPI, strings.NewReader(form.Encode()))
	if err != nil {
		return 0, none, errors.New("pushover: the API URL is unusable")
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := d.sender.client.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // keep the request out of logs
		}
		return 0, none, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	h := resp.Header.Get("Retry-After")
	wait := func(now time.Time) time.Duration { return retryAfter(h, now) }
	var answer struct {
		Status int `json:"status"`
	}
	if resp.StatusCode/100 != 2 || json.Unmarshal(raw, &answer) != nil || answer.Status != 1 {
		return resp.StatusCode, wait, fmt.Errorf("pushover answered %d", resp.StatusCode)
	}
	return resp.StatusCode, wait, nil
}
