package session

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/voiced/voiced/internal/testkit"
)

// quotaMeter is a meter with a daily quota: Budget answers what its records left.
type quotaMeter struct {
	mu    sync.Mutex
	quota time.Duration
	used  time.Duration
}

func (m *quotaMeter) Record(_ context.Context, u Usage) error {
	m.mu.Lock()
	m.used += u.Heard + u.Spoken
	m.mu.Unlock()
	return nil
}

func (m *quotaMeter) budget(context.Context, Principal) (time.Duration, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return max(m.quota-m.used, 0), true, nil
}

// TestConcurrentRepliesShareQuota (issue 18 8c): out-of-band responses speaking at once share
// what is left of the principal's quota: together they never send more than it. Before, each
// checked the budget after sending a delta, so each sent one more (8 of them used 6.4 s of a 5 s
// quota on the built server; here 8 replies each sent a delta on a 300 ms budget).
func TestConcurrentRepliesShareQuota(t *testing.T) {
	testkit.CheckLeaks(t)
	const quota = 300 * time.Millisecond
	gate := make(chan struct{})
	m := &quotaMeter{quota: quota}
	ts := newTestServer(t, Config{Engines: Engines{Voice: fakeVoice{gate: gate}, Meter: m, Budget: m.budget}})
	c := ts.open(t)
	c.send(map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": "a long story told at length, sentence after sentence"}}}})
	c.until("conversation.item.done")
	for i := range maxOutOfBand {
		c.send(map[string]any{"type": "response.create", "event_id": fmt.Sprint("evt_", i), "response": map[string]any{"conversation": "none"}})
	}
	for range maxOutOfBand {
		c.until("response.created")
	}
	close(gate) // all of them synthesize at once
	var sent int
	var quotaErr bool
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, b, err := c.conn.Read(ctx)
		cancel()
		if err != nil {
			break // closed: the quota is spent
		}
		var ev map[string]any
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Fatalf("server event is not JSON: %s", b)
		}
		switch ev["type"] {
		case "response.output_audio.delta":
			pcm, _ := base64.StdEncoding.DecodeString(ev["delta"].(string))
			sent += len(pcm) / 2
		case "error":
			quotaErr = quotaErr || ev["error"].(map[string]any)["code"] == "insufficient_quota"
		}
	}
	spoken := time.Duration(sent) * time.Second / speakRate
	m.mu.Lock()
	used := m.used
	m.mu.Unlock()
	t.Logf("%d replies at once on a %s quota: %s of audio sent, %s metered", maxOutOfBand, quota, spoken, used)
	if !quotaErr {
		t.Error("no insufficient_quota error")
	}
	if spoken > quota || used > quota {
		t.Errorf("%s sent and %s metered on a %s quota: concurrent replies must share it", spoken, used, quota)
	}
	if spoken < quota-10*time.Millisecond {
		t.Errorf("only %s sent of a %s quota", spoken, quota)
	}
}
