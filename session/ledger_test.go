package session

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"
)

// testLedger is a conversation's ledger as newConversation wires it, on a recordingMeter whose
// records the budget reads back (a quota of quota a day) and an exhausted that counts its calls.
type testLedger struct {
	*ledger
	meter     *recordingMeter
	exhausted int
	cancel    context.CancelFunc
}

func newTestLedger(t *testing.T, quota time.Duration, player Player) *testLedger {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	tl := &testLedger{meter: &recordingMeter{}, cancel: cancel}
	tl.ledger = &ledger{meter: tl.meter, principal: Principal{Subject: "ledger-test"}, player: player,
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), ctx: ctx, kick: make(chan struct{}, 1),
		exhausted: func() { tl.exhausted++ },
		budget: func(context.Context, Principal) (time.Duration, bool, error) {
			heard, spoken, _ := tl.meter.total()
			return max(quota-heard-spoken, 0), true, nil
		}}
	tl.refreshBudget(ctx)
	return tl
}

// check fails unless the meter has recorded heard and spoken, the budget left is left and
// exhausted was called exhausted times.
func (tl *testLedger) check(t *testing.T, step string, heard, spoken, left time.Duration, exhausted int) {
	t.Helper()
	h, s, _ := tl.meter.total()
	if h != heard || s != spoken {
		t.Errorf("%s: metered %v heard, %v spoken; want %v, %v", step, h, s, heard, spoken)
	}
	if got := time.Duration(tl.budgetLeft.Load()); got != left {
		t.Errorf("%s: %v of the budget left, want %v", step, got, left)
	}
	if tl.exhausted != exhausted {
		t.Errorf("%s: quota exhausted %d times, want %d", step, tl.exhausted, exhausted)
	}
}

// Over a Player (a WebRTC track) what it played is metered as spoken and spent from the quota,
// each sample once, by the meter loop's flush and by meterNow alike: 300 ms + 300 ms on a 1 s
// quota leave 400 ms, 500 ms more use it up. Once the conversation is over its last seconds are
// still metered but spend nothing (the conversation is already closing). Found by make mutate:
// takePlayed's "played − last" (either of them), its seconds' scale and its live-conversation
// check could all be broken with every test passing.
func TestLedgerPlayerPlayedIsMeteredAndSpent(t *testing.T) {
	player := newFakePlayer()
	if err := player.Play(context.Background(), "", make([]int16, 2*speakRate)); err != nil {
		t.Fatal(err)
	}
	l := newTestLedger(t, time.Second, player)
	ms := time.Millisecond
	l.flush(context.Background(), false)
	l.check(t, "nothing played yet", 0, 0, time.Second, 0)
	player.advance(speakRate * 3 / 10)
	l.flush(context.Background(), false)
	l.check(t, "300 ms played (flush)", 0, 300*ms, 700*ms, 0)
	player.advance(speakRate * 3 / 10)
	l.meterNow() // no budget refresh here: the 400 ms left are what spend left
	l.check(t, "300 ms more played (meterNow)", 0, 600*ms, 400*ms, 0)
	l.meterNow()
	l.check(t, "nothing more played", 0, 600*ms, 400*ms, 0)
	player.advance(speakRate / 2)
	l.flush(context.Background(), false)
	if l.exhausted != 1 {
		t.Fatalf("1.1 s played on a 1 s quota: exhausted %d times, want 1", l.exhausted)
	}
	l.cancel()
	left := l.budgetLeft.Load()
	player.advance(speakRate / 10)
	l.flush(context.Background(), true)
	l.check(t, "100 ms played after the end", 0, 1200*ms, time.Duration(left), 1)
}

// refreshBudget takes what the meter says is left less the reply audio reserved but not yet
// recorded: a refresh while a delta is in flight never hands its seconds back, and one already
// recorded is not taken twice. Found by make mutate: "reserved − recorded" could be broken either
// way with every test passing (the race is narrow in a conversation; here it is set up by hand).
func TestLedgerRefreshKeepsInFlightSpeech(t *testing.T) {
	l := newTestLedger(t, time.Second, nil)
	ms := time.Millisecond
	if got := l.reserve(400 * ms); got != 400*ms {
		t.Fatalf("reserved %v of 400 ms on a 1 s quota", got)
	}
	l.spokenSamples.Add(speakRate * 4 / 10)
	l.meterNow()
	l.recordedSpeech.Add(int64(400 * ms)) // the delta's record returned (reply.go's order)
	if got := l.reserve(200 * ms); got != 200*ms {
		t.Fatalf("reserved %v of 200 ms with 600 ms left", got)
	}
	l.refreshBudget(context.Background()) // the meter has the first 400 ms, not the 200 ms in flight
	l.check(t, "refresh with 200 ms in flight", 0, 400*ms, 400*ms, 0)
	l.spokenSamples.Add(speakRate * 2 / 10)
	l.meterNow()
	l.recordedSpeech.Add(int64(200 * ms))
	l.refreshBudget(context.Background())
	l.check(t, "refresh with nothing in flight", 0, 600*ms, 400*ms, 0)
	if got := l.reserve(time.Second); got != 400*ms {
		t.Fatalf("reserved %v of 1 s with 400 ms left, want 400 ms", got)
	}
	l.recordedSpeech.Add(int64(400 * ms)) // its record returned, but not to the meter read below
	l.cancel()
	l.refreshBudget(context.Background()) // the conversation is over: nothing read back
	l.check(t, "refresh after the end", 0, 600*ms, 0, 0)
}

// Audio heard past the squelch and audio a client hands over in an item are metered as heard and
// spent from the quota at their own length: 500 ms of each on a 1 s quota leaves it open, 100 ms
// more uses it up. Only heard audio counts toward the reply's usage. Found by make mutate:
// handedOver's seconds could be scaled wrong with every test passing.
func TestLedgerHeardAndHandedOverSpendQuota(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name     string
		count    func(l *ledger, n int) bool
		forReply bool
	}{
		{"heard", (*ledger).heard, true},
		{"handedOver", (*ledger).handedOver, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newTestLedger(t, time.Second, nil)
			if !tc.count(l.ledger, hearRate/2) {
				t.Fatal("500 ms on a 1 s quota: used up")
			}
			l.check(t, "500 ms", 500*ms, 0, 500*ms, 0)
			if !tc.count(l.ledger, hearRate*4/10) {
				t.Fatal("900 ms on a 1 s quota: used up")
			}
			l.check(t, "900 ms", 900*ms, 0, 100*ms, 0)
			if tc.count(l.ledger, hearRate/10) {
				t.Fatal("1 s on a 1 s quota: not used up")
			}
			l.check(t, "1 s", time.Second, 0, 0, 1)
			if got, want := l.heardForReply.Load(), int64(0); tc.forReply {
				if want = hearRate; got != want {
					t.Errorf("%d samples toward the reply's usage, want %d", got, want)
				}
			} else if got != want {
				t.Errorf("%d samples toward the reply's usage, want %d", got, want)
			}
		})
	}
}

// rateLimits reports the seconds of audio left (whole seconds, never below 0) and the seconds
// until the next UTC midnight; nothing without a quota. Found by make mutate: the reset's and the
// remaining seconds' scale could be broken with every test passing.
func TestLedgerRateLimits(t *testing.T) {
	l := newTestLedger(t, 90500*time.Millisecond, nil)
	now := time.Date(2026, 12, 6, 23, 0, 0, 0, time.FixedZone("CET", 3600)) // 22:00 UTC
	rl := l.rateLimits(now)
	if len(rl) != 1 || rl[0].Name != "tokens" || rl[0].Remaining != 90 || rl[0].ResetSeconds != 7200 {
		t.Fatalf("90.5 s left at 22:00 UTC: %+v, want tokens, 90 remaining, reset in 7200 s", rl)
	}
	l.budgetLeft.Store(int64(-time.Second))
	if rl := l.rateLimits(now); len(rl) != 1 || rl[0].Remaining != 0 {
		t.Fatalf("overspent: %+v, want 0 remaining", rl)
	}
	l.budgetLimited.Store(false)
	if rl := l.rateLimits(now); rl != nil {
		t.Fatalf("no quota: %+v, want none", rl)
	}
}
