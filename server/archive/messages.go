package archive

import (
	"context"
	"strconv"

	"github.com/natterchat/natter/persist"
)

// messages writes messages.jsonl: place after place (channels by id, then direct conversations
// by id), each a page of roots in sequence order followed by the replies of that page's threads
// (by root, then thread sequence), so a reader meets a root before its replies. Memory holds a
// page of roots and a page of replies, however long a thread.
func (x *exporter) messages(ctx context.Context) error {
	l, err := x.lines(EntryMessages)
	if err != nil {
		return err
	}
	err = x.eachChannel(ctx, func(c persist.Channel) error {
		return x.placeMessages(ctx, l, persist.Place{ChannelID: c.ID})
	})
	if err == nil {
		err = x.eachDM(ctx, func(d persist.ArchiveDM) error {
			return x.placeMessages(ctx, l, persist.Place{DMID: d.ID})
		})
	}
	if err != nil {
		return err
	}
	return l.close()
}

func (x *exporter) placeMessages(ctx context.Context, l *lines, p persist.Place) error {
	return pages(ctx, func(after string) (string, error) {
		seq, _ := strconv.ParseInt(after, 10, 64)
		roots, err := x.tx.ArchiveRoots(ctx, p, seq, x.o.PageSize)
		if err != nil {
			return "", err
		}
		var threads []string
		for _, m := range roots {
			if m.Thread != nil {
				threads = append(threads, m.ID)
			}
			if err := x.putMessage(l, m); err != nil {
				return "", err
			}
		}
		if len(threads) > 0 {
			if err := x.replies(ctx, l, threads); err != nil {
				return "", err
			}
		}
		return nextKey(roots, nil, x.o.PageSize, func(m persist.ArchiveMessage) string {
			return strconv.FormatInt(*m.ChannelSeq, 10)
		})
	})
}

// replies writes the replies of the threads rootIDs, a keyset page at a time.
func (x *exporter) replies(ctx context.Context, l *lines, rootIDs []string) error {
	root, seq := "", int64(0)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		list, err := x.tx.ArchiveReplies(ctx, rootIDs, root, seq, x.o.PageSize)
		if err != nil {
			return err
		}
		for _, m := range list {
			if err := x.putMessage(l, m); err != nil {
				return err
			}
		}
		if len(list) < x.o.PageSize {
			return nil
		}
		last := list[len(list)-1]
		root, seq = last.ParentMessageID, *last.ThreadSeq
	}
}

func (x *exporter) putMessage(l *lines, m persist.ArchiveMessage) error {
	x.see(m.AuthorID)
	if m.Thread != nil {
		x.see(m.Thread.LastReplyAuthorIDs...)
	}
	for _, r := range m.Reactions {
		x.see(r.UserID)
	}
	for _, a := range m.Attachments {
		x.see(a.AttachedBy)
	}
	return l.put(m)
}
