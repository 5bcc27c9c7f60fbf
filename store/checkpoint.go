package store

import (
	"context"
	"sync"
)

// autoCheckpointPages is how long SQLite lets a connection's write-ahead
// log grow, in pages, before the connection that commits copies it into the
// database file itself (SQLite's default is 1,000). The store's own
// checkpointer normally copies the log long before that, in the background:
// this is the backstop when it falls behind, and what other writers (a
// review, the viewer's index) rely on.
const autoCheckpointPages = 16384

// checkpointer copies the write-ahead log into the database file on a
// connection of its own while the writer goes on committing. On a large run
// the copying (reading the log, writing the pages where they belong, two
// fsyncs) was a third of the writer's time, and the sessions in flight
// waited for it; here it runs on another core. A checkpoint is only ever
// started after a commit, and never makes a commit wait: SQLite's PASSIVE
// checkpoint copies what no reader still needs and stops.
type checkpointer struct {
	once, stopped sync.Once
	kick          chan struct{} // a commit happened (holds one)
	stop, done    chan struct{}
}

// checkpointSoon asks the checkpointer to copy the log once more, starting
// it on the store's first commit. It never blocks.
func (s *Store) checkpointSoon() {
	if s.db.d.postgres() {
		return
	}
	c := &s.ckpt
	c.once.Do(func() {
		c.kick, c.stop, c.done = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
		go s.checkpointLoop()
	})
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (s *Store) checkpointLoop() {
	c := &s.ckpt
	defer close(c.done)
	for {
		select {
		case <-c.stop:
			return
		case <-c.kick:
		}
		// An error (the database busy, say) only leaves the copying to the
		// next kick or to the committing connection's automatic
		// checkpoint: nothing is lost either way.
		var busy, logPages, copied int
		_ = s.db.QueryRowContext(context.Background(), `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &logPages, &copied)
	}
}

// stopCheckpoints waits for a checkpoint under way and stops the
// checkpointer, before the store closes its database.
func (s *Store) stopCheckpoints() {
	c := &s.ckpt
	c.once.Do(func() {}) // none started: none will be
	if c.stop == nil {
		return
	}
	c.stopped.Do(func() { close(c.stop) })
	<-c.done
}
