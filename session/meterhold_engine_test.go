package session

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/voiced/voiced/internal/testkit"
	"github.com/voiced/voiced/wire"
)

// holdCountingMeter is a MeterHolder that notes every Hold, every release and every Record made while
// no hold was taken (a record the meter's Close would not have waited for).
type holdCountingMeter struct {
	recordingMeter
	mu       sync.Mutex
	holds    int
	releases int
	unheld   int // Records while no hold was outstanding
}

func (m *holdCountingMeter) Hold() (release func()) {
	m.mu.Lock()
	m.holds++
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		m.releases++
		m.mu.Unlock()
	}
}

func (m *holdCountingMeter) Record(ctx context.Context, u Usage) error {
	m.mu.Lock()
	if m.holds == m.releases {
		m.unheld++
	}
	m.mu.Unlock()
	return m.recordingMeter.Record(ctx, u)
}

// check asserts the conversation took one hold and gave it back, with every record inside it.
func (m *holdCountingMeter) check(t *testing.T, wantRecords bool) {
	t.Helper()
	m.mu.Lock()
	holds, releases, unheld := m.holds, m.releases, m.unheld
	m.mu.Unlock()
	heard, _, _ := m.total()
	if holds != 1 || releases != 1 {
		t.Errorf("after the conversation returned: %d holds, %d releases of the meter; want 1 and 1 (Meter.Close would wait CloseWait for it)", holds, releases)
	}
	if unheld != 0 {
		t.Errorf("%d meter records made while the conversation held no hold", unheld)
	}
	if wantRecords && heard == 0 {
		t.Errorf("nothing heard was metered: the hold covered no record")
	}
}

// failingTransport is a fakeTransport whose Receive fails (a broken connection, not the client's
// close) once cut is closed.
type failingTransport struct {
	*fakeTransport
	cut chan struct{}
}

func (f *failingTransport) Receive(ctx context.Context) (Inbound, error) {
	select {
	case in := <-f.in:
		return in, nil
	case <-f.cut:
		return Inbound{}, errors.New("connection reset by peer")
	case <-ctx.Done():
		return Inbound{}, ctx.Err()
	}
}

// slowSender is a fakeTransport whose every Send takes 10 ms (a client across a network).
type slowSender struct{ *fakeTransport }

func (f slowSender) Send(ctx context.Context, event []byte) error {
	time.Sleep(10 * time.Millisecond)
	return f.fakeTransport.Send(ctx, event)
}

// A conversation holds the meter from its start and releases the hold once it has returned, its
// last records made inside the hold: when the client closes, when the connection breaks, and when
// the conversation fails to start (meter.Close waits for holders, up to CloseWait: a hold never
// released would stall every shutdown by that much).
func TestConversationReleasesMeterHold(t *testing.T) {
	speech := base64.StdEncoding.EncodeToString(pcm24(300, true))
	turn := func(tr *fakeTransport) { // a committed turn: its heard seconds are recorded
		tr.event(map[string]any{"type": "input_audio_buffer.append", "audio": speech})
		tr.event(map[string]any{"type": "input_audio_buffer.commit"})
		tr.until("input_audio_buffer.committed")
	}
	newServer := func(t *testing.T, m Meter) *Server {
		s, err := New(Config{Engines: Engines{Ears: fakeEars{"hi"}, Meter: m}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	t.Run("client closes", func(t *testing.T) {
		testkit.CheckLeaks(t)
		m := &holdCountingMeter{}
		tr := newFakeTransport(t, Media{})
		end := converse(t, newServer(t, m), tr)
		tr.until("session.created")
		turn(tr)
		end()
		m.check(t, true)
	})

	t.Run("connection breaks", func(t *testing.T) {
		testkit.CheckLeaks(t)
		m := &holdCountingMeter{}
		tr := &failingTransport{fakeTransport: newFakeTransport(t, Media{}), cut: make(chan struct{})}
		done := make(chan struct{})
		go func() {
			defer close(done)
			newServer(t, m).Converse(context.Background(), tr, Grant{Principal: Principal{Subject: "hold-broken"}}, wire.GA, "m")
		}()
		tr.until("session.created")
		turn(tr.fakeTransport)
		close(tr.cut)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the conversation did not return within 10 s of its connection breaking")
		}
		m.check(t, true)
	})

	t.Run("fails to start", func(t *testing.T) {
		testkit.CheckLeaks(t)
		// Twenty times, each error taking 10 ms to send: without the wait for the writer, run
		// returns (cancelling it) while it sends, and whether the close is then reached is the
		// writer's coin toss between it and the cancelled context.
		bad := Grant{Principal: Principal{Subject: "hold-failed"}, Session: json.RawMessage(`{"voice": 5}`)}
		for i := range 20 {
			m := &holdCountingMeter{}
			tr := newFakeTransport(t, Media{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				newServer(t, m).Converse(context.Background(), slowSender{tr}, bad, wire.GA, "m")
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("a conversation that failed to start did not return within 10 s")
			}
			m.check(t, false)
			// The client is told why, and the close says the server failed.
			tr.mu.Lock()
			evs := append([]map[string]any(nil), tr.events...)
			ends := append([]End(nil), tr.ends...)
			tr.mu.Unlock()
			if len(evs) == 0 || evs[len(evs)-1]["type"] != "error" {
				t.Fatalf("run %d: events sent: [%s], want an error last", i, typesOf(evs))
			}
			if len(ends) == 0 || ends[0] != EndServerError {
				t.Fatalf("run %d: transport closed with %v, want EndServerError first", i, ends)
			}
		}
	})
}
