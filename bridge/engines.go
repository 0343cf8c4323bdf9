package bridge

import (
	"context"
	"errors"
	"time"

	"github.com/voiced/voiced/meter"
	"github.com/voiced/voiced/mind"
	"github.com/voiced/voiced/session"
	"github.com/voiced/voiced/speechcore"
	"github.com/voiced/voiced/turn"
)

// errNoSilero: a conversation asked for a squelch or a turn detector before Silero was loaded.
var errNoSilero = errors.New("the Silero model is not loaded")

// Engines wires the speech service's engines and the meter to session's seams, with mind as the
// conversation's mind. The engines are looked up per call: the service fills them as it loads,
// and Ready refuses sockets until it is warm. A nil svc refuses every socket
// (speech_assets_not_mounted); a nil meter meters nothing and admits everyone.
func Engines(svc *speechcore.Service, m mind.Mind, mtr *meter.Meter) session.Engines {
	e := session.Engines{Mind: m}
	if mtr != nil {
		e.Meter = Meter{mtr}
		e.Admit = func(ctx context.Context, p session.Principal) error { return mtr.Admit(ctx, p.Subject) }
		e.Budget = func(ctx context.Context, p session.Principal) (time.Duration, bool, error) {
			return mtr.Budget(ctx, p.Subject)
		}
	}
	if svc == nil {
		e.Ready = func() error { return speechcore.ErrNotMounted }
		return e
	}
	e.Ready = svc.Ready
	e.Ears = NewEars(svc)
	e.Voice = NewVoice(svc)
	e.NewSquelch = func() (session.Squelch, error) {
		if svc.Silero == nil {
			return nil, errNoSilero
		}
		return NewSharedSquelch(svc.Silero)
	}
	e.NewTurnDetectorOn = session.TurnDetectorOn
	e.NewTurnDetector = session.TurnDetectors(turn.SpeechFunc(func() (turn.Prober, error) {
		if svc.Silero == nil {
			return nil, errNoSilero
		}
		s, err := svc.Silero.NewStream()
		if err != nil {
			return nil, err
		}
		return s, nil
	}))
	return e
}
