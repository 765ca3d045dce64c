package realtime

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// poller is one epoll instance watching every socket of the hub. Registrations are one-shot: an
// event disarms the descriptor until the worker that handled it arms it again, so a socket is
// never handled by two workers at once.
type poller struct {
	epfd int
	mu   sync.RWMutex
	byFD map[int32]*socket
}

func newPoller() (*poller, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("realtime: epoll: %w", err)
	}
	return &poller{epfd: fd, byFD: map[int32]*socket{}}, nil
}

const readEvents = unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT

func (p *poller) add(s *socket) error {
	p.mu.Lock()
	p.byFD[int32(s.fd)] = s
	p.mu.Unlock()
	return unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, s.fd, &unix.EpollEvent{Events: readEvents, Fd: int32(s.fd)})
}

// arm re-enables a socket's descriptor: read readiness unless it is closing, write readiness
// when its queue is stuck. Hang-ups and errors are reported either way.
func (p *poller) arm(s *socket, wantRead, wantWrite bool) error {
	ev := uint32(unix.EPOLLONESHOT)
	if wantRead {
		ev |= readEvents
	}
	if wantWrite {
		ev |= unix.EPOLLOUT
	}
	return unix.EpollCtl(p.epfd, unix.EPOLL_CTL_MOD, s.fd, &unix.EpollEvent{Events: ev, Fd: int32(s.fd)})
}

// remove forgets a socket before its descriptor is closed, so a reused number never reaches it.
func (p *poller) remove(s *socket) {
	p.mu.Lock()
	if p.byFD[int32(s.fd)] == s {
		delete(p.byFD, int32(s.fd))
	}
	p.mu.Unlock()
	_ = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, s.fd, nil)
}

// run waits for readiness until stop closes and hands each ready socket to ready.
func (p *poller) run(stop <-chan struct{}, ready func(s *socket, readable, writable bool)) error {
	events := make([]unix.EpollEvent, 256)
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		n, err := unix.EpollWait(p.epfd, events, 100)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("realtime: epoll wait: %w", err)
		}
		p.mu.RLock()
		for _, ev := range events[:n] {
			if s := p.byFD[ev.Fd]; s != nil {
				readable := ev.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0
				ready(s, readable, ev.Events&unix.EPOLLOUT != 0)
			}
		}
		p.mu.RUnlock()
	}
}

func (p *poller) close() error { return unix.Close(p.epfd) }
