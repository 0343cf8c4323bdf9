package whisper

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/voiced/voiced/speechcore/assets"
	"github.com/voiced/voiced/speechcore/kokoro"
)

// TestStressBindingsBesideSynthesis: three engines (each its own sessions, I/O bindings and
// cache values) decode at once, told, detected, with timestamps and logprobs, some cancelled
// mid-run, while Kokoro speaks Spanish through espeak-ng beside them in the same process: every
// decode that finishes reads the same ids and log-probabilities as the same request alone,
// every synthesis the same phonemes (a value released while bound, a binding shared between
// decodes, or a double release shows here as a changed result or a crash). Run under -race.
func TestStressBindingsBesideSynthesis(t *testing.T) {
	_, en := speak16k(t, roundTripPhonemes)
	_, es := speak16k(t, spanishPhonemes)
	reqs := []struct {
		pcm []float32
		req Request
	}{
		{en, Request{Language: "en"}},
		{es, Request{Language: "auto", Logprobs: true}},
		{es, Request{Language: "es", Timestamps: true, Logprobs: true}},
		{en, Request{Language: "auto", Timestamps: true}},
	}
	engines := []*Engine{loadEngine(t, Options{}), loadEngine(t, Options{SkipWarmup: true}), loadEngine(t, Options{SkipWarmup: true})}
	key := func(r Result) string { return fmt.Sprintf("%q %v %v %s", r.Text, r.Tokens, r.Logprobs, r.Language) }
	want := make([]string, len(reqs))
	for i, r := range reqs {
		res, err := engines[0].TranscribeAs(context.Background(), r.pcm, r.req)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = key(res)
	}
	tts, err := kokoro.Load(context.Background(), testEnv, filepath.Join(testMount, filepath.FromSlash(assets.KokoroDir)), kokoro.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tts.Close()
	const spanish = "Hola, ¿cómo estás? El perro corre tres veces."
	wantPhonemes, err := tts.PhonemesFor("ef_dora", spanish)
	if err != nil {
		t.Fatal(err)
	}

	const rounds = 6
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for ei, e := range engines {
		for w := 0; w < 2; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 0; n < rounds; n++ {
					i := (ei + w + n) % len(reqs)
					ctx, cancel := context.Background(), context.CancelFunc(func() {})
					if n%3 == 2 { // cancelled mid-decode: Terminate stops a bound run
						ctx, cancel = context.WithTimeout(context.Background(), time.Duration(n)*time.Millisecond)
					}
					res, err := e.TranscribeAs(ctx, reqs[i].pcm, reqs[i].req)
					cancel()
					switch {
					case errors.Is(err, context.DeadlineExceeded):
					case err != nil:
						errs <- fmt.Errorf("engine %d request %d: %w", ei, i, err)
						return
					case key(res) != want[i]:
						errs <- fmt.Errorf("engine %d request %d: %s, alone %s", ei, i, key(res), want[i])
						return
					}
				}
			}()
		}
	}
	for s := 0; s < 2; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 2*rounds; n++ {
				ps, err := tts.PhonemesFor("ef_dora", spanish)
				if err == nil && ps != wantPhonemes {
					err = fmt.Errorf("phonemes %q, alone %q", ps, wantPhonemes)
				}
				if err == nil {
					err = tts.Speak(context.Background(), kokoro.Request{Text: spanish, Voice: "ef_dora"}, func(kokoro.Chunk) error { return nil })
				}
				if err != nil {
					errs <- fmt.Errorf("synthesis: %w", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
