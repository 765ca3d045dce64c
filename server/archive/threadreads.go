package archive

import (
	"context"
	"strings"

	"github.com/natterchat/natter/persist"
)

// EntryThreadReads holds how far each person has read each thread (persist.ArchiveThreadRead),
// channel by channel then conversation by conversation. An archive without it (written before
// it existed) imports as before: every follower has read their threads to the end.
const EntryThreadReads = "thread_reads.jsonl"

func (x *exporter) threadReads(ctx context.Context) error {
	l, err := x.lines(EntryThreadReads)
	if err != nil {
		return err
	}
	each := func(p persist.Place) error {
		// A page's key is its last (root, user) pair; ids hold no space.
		return pages(ctx, func(after string) (string, error) {
			root, user, _ := strings.Cut(after, " ")
			list, err := x.tx.ArchiveThreadReads(ctx, x.o.Scope, p, root, user, x.o.PageSize)
			for _, r := range list {
				x.see(r.UserID)
				if err := l.put(r); err != nil {
					return "", err
				}
			}
			return nextKey(list, err, x.o.PageSize, func(r persist.ArchiveThreadRead) string { return r.RootID + " " + r.UserID })
		})
	}
	if err := x.eachChannel(ctx, func(c persist.Channel) error { return each(persist.Place{ChannelID: c.ID}) }); err != nil {
		return err
	}
	if err := x.eachDM(ctx, func(d persist.ArchiveDM) error { return each(persist.Place{DMID: d.ID}) }); err != nil {
		return err
	}
	return l.close()
}

// threadReadsIn restores each thread read position over the import's default (read to the end,
// set when the thread's details were written), so replies someone had not read stay unread.
func (im *importer) threadReadsIn(ctx context.Context) error {
	return im.batches(ctx, EntryThreadReads, func(tx *persist.Tx, _ int, line []byte) (func(), error) {
		var r persist.ArchiveThreadRead
		if err := decode(line, &r); err != nil {
			return nil, err
		}
		root, err := im.message(ctx, tx, r.RootID)
		if err != nil {
			return nil, err
		}
		user, err := im.person(r.UserID)
		if err != nil {
			return nil, err
		}
		return nil, tx.HistoryThreadRead(ctx, im.h, root, user, r)
	})
}
