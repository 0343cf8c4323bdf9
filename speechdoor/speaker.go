package speechdoor

import (
	"context"
	"net/http"
)

// Speaker is whom a raw door's seconds are billed to (issue 20 item 3): the principal (and org)
// the request's credential names. cmd/voiced's speech auth sets it on the request's context
// (WithSpeaker): a principal's JWT or ticket names that principal; the service token may name
// the principal a trusted backend acts for (the X-Voiced-Principal and X-Voiced-Org headers);
// a request that names nobody is billed to UsagePrincipal ("service").
type Speaker struct {
	Principal string
	Org       string
}

type speakerKey struct{}

// WithSpeaker returns ctx carrying whom the door bills.
func WithSpeaker(ctx context.Context, who Speaker) context.Context {
	return context.WithValue(ctx, speakerKey{}, who)
}

// SpeakerOf is whom a request's context bills: UsagePrincipal when it names nobody.
func SpeakerOf(ctx context.Context) Speaker {
	if who, ok := ctx.Value(speakerKey{}).(Speaker); ok && who.Principal != "" {
		return who
	}
	return Speaker{Principal: UsagePrincipal}
}

// usageTab is one request's meter: its seconds billed to its speaker.
type usageTab struct {
	s   *Doors
	who Speaker
}

// tab is r's meter.
func (s *Doors) tab(r *http.Request) usageTab { return usageTab{s: s, who: SpeakerOf(r.Context())} }

// heard records seconds of audio put in front of the decoder by a raw door, durably.
func (t usageTab) heard(seconds float64) {
	if t.s.usage != nil && seconds > 0 {
		t.s.usage.Add(t.who.Principal, t.who.Org, UsageDoorTranscribe, seconds, 0)
		t.s.syncUsage()
	}
}

// spoken records seconds of audio a raw door sent, durably.
func (t usageTab) spoken(seconds float64) {
	if t.s.usage != nil && seconds > 0 {
		t.s.usage.Add(t.who.Principal, t.who.Org, UsageDoorSynthesize, 0, seconds)
		t.s.syncUsage()
	}
}
