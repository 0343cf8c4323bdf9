package bridge

import (
	"github.com/voiced/voiced/session"
	"github.com/voiced/voiced/speechcore/squelch"
	"github.com/voiced/voiced/turn"
)

// SharedSquelch is a conversation's squelch and the one Silero pass it lends to the
// conversation's turn detectors (session.SharedSquelch): the model runs once per window for both.
type SharedSquelch struct {
	*squelch.Squelch
	*turn.Shared
}

var _ session.SharedSquelch = SharedSquelch{}

// NewSharedSquelch opens a stream on the Silero model and a squelch reading it through the
// shared pass.
func NewSharedSquelch(m *squelch.Model) (SharedSquelch, error) {
	stream, err := m.NewStream()
	if err != nil {
		return SharedSquelch{}, err
	}
	pass := turn.Share(stream)
	reader, err := pass.NewProber()
	if err == nil {
		var q *squelch.Squelch
		if q, err = squelch.New(squelch.Config{Prober: reader}); err == nil {
			return SharedSquelch{q, pass}, nil
		}
	}
	pass.Close()
	return SharedSquelch{}, err
}

// Close closes the squelch's reader, then the pass.
func (s SharedSquelch) Close() error {
	err := s.Squelch.Close()
	if cerr := s.Shared.Close(); err == nil {
		err = cerr
	}
	return err
}
