package whisper

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/speechcore/fixture"
)

// TestDecodersSameText: an engine with two decoders gives every one of many concurrent finals
// and partials the text one decoder gives it, and its queue drains to zero.
func TestDecodersSameText(t *testing.T) {
	one := loadEngine(t, Options{})
	two := loadEngine(t, Options{Decoders: 2})
	if n := len(two.models); n != 2 {
		t.Fatalf("Decoders 2 opened %d models", n)
	}
	ids := fixture.PhonemeIDs(roundTripPhonemes)
	pcm := audio.Resample(speakFixture(t, ids), fixture.SampleRate, audio.WhisperSampleRate)
	want, err := one.Transcribe(context.Background(), pcm)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			req := Request{Owner: fmt.Sprint("c", i), Kind: Final}
			if i%2 == 1 {
				req.Kind = Partial
			}
			got, err := two.TranscribeAs(context.Background(), pcm, req)
			switch {
			case req.Kind == Partial && errors.Is(err, ErrPreempted):
				// both decoders were busy when a final came: the partial made way
			case err != nil:
				errs <- fmt.Errorf("request %d (%v): %w", i, req.Kind, err)
			case got.Text != want.Text:
				errs <- fmt.Errorf("request %d (%v): %q, want %q", i, req.Kind, got.Text, want.Text)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if d := two.Stats().QueueDepth; d != 0 {
		t.Fatalf("queue depth %d after every request was answered", d)
	}
}
