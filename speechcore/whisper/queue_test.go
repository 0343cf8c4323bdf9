package whisper

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// tagged is a job whose pcm's first sample names it, so the order pop gives can be read back.
func tagged(n int) job {
	return job{ctx: context.Background(), pcm: []float32{float32(n)}, reply: make(chan jobResult, 1)}
}

func popAll(s *schedule) []int {
	var got []int
	for j, ok := s.pop(); ok; j, ok = s.pop() {
		got = append(got, int(j.pcm[0]))
	}
	return got
}

func mustPush(t *testing.T, s *schedule, owner string, kind Kind, j job) {
	t.Helper()
	if err := s.push(context.Background(), Request{Owner: owner, Kind: kind}, j, nil); err != nil {
		t.Fatal(err)
	}
}

// TestScheduleOrder: finals before partials, round robin between owners, FIFO within an owner.
func TestScheduleOrder(t *testing.T) {
	s := newSchedule(64, 8, 1)
	mustPush(t, s, "p", Partial, tagged(100)) // owners without finals: a final drops its own owner's
	mustPush(t, s, "a", Final, tagged(1))
	mustPush(t, s, "a", Final, tagged(2))
	mustPush(t, s, "a", Final, tagged(3))
	mustPush(t, s, "b", Final, tagged(10))
	mustPush(t, s, "q", Partial, tagged(200))
	mustPush(t, s, "c", Final, tagged(20))
	mustPush(t, s, "b", Final, tagged(11))
	if got, want := popAll(s), []int{1, 10, 20, 2, 11, 3, 100, 200}; !slices.Equal(got, want) {
		t.Fatalf("served %v, want %v (finals round robin by owner, then partials oldest owner first)", got, want)
	}
	if n := s.len(); n != 0 {
		t.Fatalf("len %d after popping everything", n)
	}
}

// TestScheduleNewestPartialWins: an owner's queued partial is replaced by its next one, which
// keeps the older one's place; the replaced caller hears ErrSuperseded at once.
func TestScheduleNewestPartialWins(t *testing.T) {
	s := newSchedule(64, 2, 1)
	old, mid, newest, other := tagged(1), tagged(2), tagged(3), tagged(9)
	mustPush(t, s, "a", Partial, old)
	mustPush(t, s, "b", Partial, other)
	mustPush(t, s, "a", Partial, mid)
	mustPush(t, s, "a", Partial, newest)
	for name, j := range map[string]job{"first": old, "second": mid} {
		select {
		case r := <-j.reply:
			if !errors.Is(r.err, ErrSuperseded) {
				t.Fatalf("the %s partial got %v, want ErrSuperseded", name, r.err)
			}
		default:
			t.Fatalf("the %s partial was not answered when a newer one replaced it", name)
		}
	}
	if got, want := popAll(s), []int{3, 9}; !slices.Equal(got, want) {
		t.Fatalf("served %v, want %v (a's newest in a's place, then b's)", got, want)
	}
}

// TestScheduleOwnerCap: an owner with OwnerDepth finals queued waits for room (its own backlog
// slows it); another owner is queued at once, and served before the waiting owner's next.
func TestScheduleOwnerCap(t *testing.T) {
	s := newSchedule(64, 2, 1)
	mustPush(t, s, "greedy", Final, tagged(1))
	mustPush(t, s, "greedy", Final, tagged(2))
	pushed := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Go(func() { pushed <- s.push(context.Background(), Request{Owner: "greedy"}, tagged(3), nil) })
	select {
	case err := <-pushed:
		t.Fatalf("a third final of one owner was queued (%v) past its cap of 2", err)
	case <-time.After(50 * time.Millisecond): // it must still be waiting; a generous look, not a measurement
	}
	mustPush(t, s, "normal", Final, tagged(10)) // not held by greedy's cap
	if j, _ := s.pop(); j.pcm[0] != 1 {
		t.Fatalf("first served %v, want greedy's 1", j.pcm[0])
	}
	if err := <-pushed; err != nil { // room: greedy's third goes in behind normal's
		t.Fatal(err)
	}
	wg.Wait()
	if got, want := popAll(s), []int{10, 2, 3}; !slices.Equal(got, want) {
		t.Fatalf("served %v, want %v", got, want)
	}
	// The wait ends with the caller's context.
	mustPush(t, s, "greedy", Final, tagged(4))
	mustPush(t, s, "greedy", Final, tagged(5))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.push(ctx, Request{Owner: "greedy"}, tagged(6), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("push past the cap with a cancelled context: %v, want context.Canceled", err)
	}
}

// TestScheduleTotalDepth: the queue as a whole holds depth finals; owners of their own ("")
// each get a turn of their own.
func TestScheduleTotalDepth(t *testing.T) {
	s := newSchedule(3, 2, 1)
	for i := range 3 {
		mustPush(t, s, "", Final, tagged(i))
	}
	quit := make(chan struct{})
	close(quit)
	if err := s.push(context.Background(), Request{}, tagged(3), quit); !errors.Is(err, ErrClosed) {
		t.Fatalf("push into a full queue of a closed engine: %v, want ErrClosed", err)
	}
	if got, want := popAll(s), []int{0, 1, 2}; !slices.Equal(got, want) {
		t.Fatalf("served %v, want %v", got, want)
	}
}

// TestScheduleGreedyOwner: one owner's hundreds of finals and another's one: the other's is
// served within two pops of being queued, whatever the backlog.
func TestScheduleGreedyOwner(t *testing.T) {
	s := newSchedule(64, DefaultOwnerDepth, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for i := range 300 { // each commit's worker, as the conversation starts them
		wg.Go(func() { s.push(ctx, Request{Owner: "greedy"}, tagged(i), nil) })
	}
	for s.len() < DefaultOwnerDepth { // the greedy owner's share is queued
		time.Sleep(time.Millisecond)
	}
	mustPush(t, s, "normal", Final, tagged(-1))
	position := 0
	for {
		j, ok := s.pop()
		if !ok {
			time.Sleep(time.Millisecond) // the greedy workers refill
			continue
		}
		position++
		if j.pcm[0] == -1 {
			break
		}
	}
	t.Logf("the normal owner's final was served %d pop(s) after it was queued, behind 300 of the greedy owner's", position)
	if position > 2 {
		t.Fatalf("served at position %d, want ≤ 2", position)
	}
	cancel()
	wg.Wait()
}

// TestFinalPreemptsRunningPartial: a final queued while a partial decodes ends that decode (its
// caller hears ErrPreempted) and is served next: a final never waits for a partial's decode.
func TestFinalPreemptsRunningPartial(t *testing.T) {
	s := newSchedule(64, 2, 1)
	part := tagged(1)
	mustPush(t, s, "a", Partial, part)
	j, _ := s.pop()
	started := make(chan struct{})
	served := make(chan struct{})
	go func() {
		defer close(served)
		s.serve(j, func(ctx context.Context, _ job) (Result, error) {
			close(started)
			select { // a decode that honours its context between steps, as model.transcribe does
			case <-ctx.Done():
				return Result{}, ctx.Err()
			case <-time.After(10 * time.Second):
				return Result{Text: "decoded"}, nil
			}
		})
	}()
	<-started
	final := tagged(2)
	mustPush(t, s, "b", Final, final)
	select {
	case r := <-part.reply:
		if !errors.Is(r.err, ErrPreempted) {
			t.Fatalf("the running partial got (%q, %v), want ErrPreempted", r.res.Text, r.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a final was queued behind a partial's decode: the partial was not preempted")
	}
	<-served
	if got := popAll(s); !slices.Equal(got, []int{2}) {
		t.Fatalf("served %v after the preemption, want the final [2]", got)
	}
	if n := s.preempted.Load(); n != 1 {
		t.Fatalf("preempted count %d, want 1", n)
	}
}

// TestFinalDropsOwnersQueuedPartial: a final drops its own owner's queued partial (the turn it
// ends is over), not another owner's.
func TestFinalDropsOwnersQueuedPartial(t *testing.T) {
	s := newSchedule(64, 2, 1)
	stale, other := tagged(1), tagged(9)
	mustPush(t, s, "a", Partial, stale)
	mustPush(t, s, "b", Partial, other)
	mustPush(t, s, "a", Final, tagged(2))
	select {
	case r := <-stale.reply:
		if !errors.Is(r.err, ErrSuperseded) {
			t.Fatalf("a's queued partial got %v, want ErrSuperseded", r.err)
		}
	default:
		t.Fatal("a's final left a's queued partial in the queue")
	}
	if got, want := popAll(s), []int{2, 9}; !slices.Equal(got, want) {
		t.Fatalf("served %v, want %v (a's final, then b's partial)", got, want)
	}
}

// TestPartialServedWhenIdle: with nothing else queued a partial is decoded and answered with
// its result and its queue wait.
func TestPartialServedWhenIdle(t *testing.T) {
	s := newSchedule(64, 2, 1)
	j := tagged(1)
	j.queued = time.Now()
	j.kind = Partial
	mustPush(t, s, "a", Partial, j)
	p, _ := s.pop()
	s.serve(p, func(ctx context.Context, _ job) (Result, error) { return Result{Text: "heard"}, nil })
	r := <-j.reply
	if r.err != nil || r.res.Text != "heard" || r.res.Kind != Partial || r.res.Wait <= 0 {
		t.Fatalf("idle partial: %+v, %v; want its text, kind partial and a wait", r.res, r.err)
	}
}

// TestTwoDecodersServeAtOnce: with two owners working one schedule, two finals queued together
// are decoded at once (each decode waits until the other has started), and a partial being
// decoded is not preempted while a decoder is free for the final.
func TestTwoDecodersServeAtOnce(t *testing.T) {
	s := newSchedule(64, 2, 2)
	quit := make(chan struct{})
	var started sync.WaitGroup
	started.Add(2)
	both := make(chan struct{})
	go func() { started.Wait(); close(both) }()
	decode := func(ctx context.Context, j job) (Result, error) {
		if j.pcm[0] == 0 { // the partial: decodes until told to stop
			<-ctx.Done()
			return Result{}, ctx.Err()
		}
		started.Done()
		select {
		case <-both:
			return Result{Text: "together"}, nil
		case <-time.After(5 * time.Second):
			return Result{}, errors.New("decoded alone: the other final waited")
		}
	}
	var owners sync.WaitGroup
	for range 2 {
		owners.Go(func() { s.work(quit, decode) })
	}
	defer func() { close(quit); owners.Wait() }()

	a, b := tagged(1), tagged(2)
	mustPush(t, s, "a", Final, a)
	mustPush(t, s, "b", Final, b)
	for _, j := range []job{a, b} {
		if r := <-j.reply; r.err != nil {
			t.Fatal(r.err)
		}
	}

	pctx, stop := context.WithCancel(context.Background())
	defer stop() // before the owners are waited for: the partial's decode ends with it
	part := job{ctx: pctx, pcm: []float32{0}, reply: make(chan jobResult, 1)}
	mustPush(t, s, "p", Partial, part)
	for s.inFlight() != 1 || s.len() != 0 { // the partial is being decoded
		time.Sleep(time.Millisecond)
	}
	started.Add(1) // the final below decodes on the free decoder (both is closed: no wait)
	f := job{ctx: context.Background(), pcm: []float32{3}, reply: make(chan jobResult, 1)}
	mustPush(t, s, "c", Final, f)
	if r := <-f.reply; r.err != nil {
		t.Fatal(r.err)
	}
	select {
	case r := <-part.reply:
		t.Fatalf("the partial was answered (%v) while a decoder was free for the final", r.err)
	default:
	}
	if n := s.preempted.Load(); n != 0 {
		t.Fatalf("preempted %d partials with a decoder free", n)
	}
}
