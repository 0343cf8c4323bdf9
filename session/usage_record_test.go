package session

import (
	"context"
	"errors"
	"testing"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/internal/testkit"
)

// flakyRecorder is a holdingMeter that keeps session records in memory and fails the first
// write of a closed record, as a store away for a moment would.
type flakyRecorder struct {
	holdingMeter
	writes       []SessionUsage // the written ones, in order
	finalTries   int
	unheldWrites int // records written while the conversation held no meter
}

var errStoreAway = errors.New("store away for a moment")

func (m *flakyRecorder) RecordSession(_ context.Context, u SessionUsage) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held == 0 {
		m.unheldWrites++
	}
	if !u.End.IsZero() {
		m.finalTries++
		if m.finalTries == 1 {
			return errStoreAway
		}
	}
	m.writes = append(m.writes, u)
	return nil
}

// A failed write of a session's closed record is tried again (issue 20 item 4: the record says
// what the session cost), while the conversation still holds the meter, so a stopping server's
// meter waits for it. Without the retry the store keeps only the open record (no end, no
// reason) and this test fails.
func TestSessionRecordFinalWriteRetried(t *testing.T) {
	testkit.CheckLeaks(t)
	m := &flakyRecorder{}
	ts := newTestServer(t, Config{Engines: Engines{Ears: fakeEars{"hi"}, Voice: fakeVoice{}, Meter: m}})
	c := ts.open(t)
	c.send(appendEvent(pcm24(200, false)))
	c.send(map[string]any{"type": "input_audio_buffer.commit"})
	c.until("input_audio_buffer.committed")
	c.conn.Close(websocket.StatusNormalClosure, "")
	ts.http.Close()
	ts.Wait()

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.finalTries != 2 {
		t.Fatalf("the closed record was tried %d times, want 2 (one failure, one retry)", m.finalTries)
	}
	if len(m.writes) == 0 {
		t.Fatal("no session record written")
	}
	last := m.writes[len(m.writes)-1]
	if last.End.IsZero() || last.EndReason != EndClientLeft || last.Heard <= 0 || last.ID == "" {
		t.Fatalf("the last record written: %+v", last)
	}
	if m.unheldWrites != 0 || m.held != 0 {
		t.Fatalf("%d records written while the meter was not held; %d holds left", m.unheldWrites, m.held)
	}
}
