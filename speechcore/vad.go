package speechcore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/voiced/voiced/speechcore/assets"
	"github.com/voiced/voiced/speechcore/squelch"
)

// loadVAD loads the mount's Silero model once (every squelch and turn detector opens its own
// Stream on it) and runs a warm-up second of silence through a stream, filling s.Silero and s.VAD.
func (s *Service) loadVAD(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var m *squelch.Model
	start := time.Now()
	delta, err := ResidentDelta(func() error {
		var err error
		m, err = squelch.Load(s.Env, s.Mount.Path(assets.SileroModel))
		return err
	})
	if err != nil {
		return fmt.Errorf("load vad model: %w", err)
	}
	loaded := time.Now()
	if err := warmVAD(m); err != nil {
		m.Close()
		return fmt.Errorf("warm up vad model: %w", err)
	}
	s.Silero = m
	s.VAD = ModelStats{
		Loaded:             true,
		LoadMs:             float64(loaded.Sub(start).Microseconds()) / 1000,
		WarmupMs:           float64(time.Since(loaded).Microseconds()) / 1000,
		ResidentDeltaBytes: delta,
	}
	s.log.Info("vad model warm", "model", "silero-vad", "loadMs", s.VAD.LoadMs, "warmupMs", s.VAD.WarmupMs, "residentDeltaBytes", delta)
	return nil
}

func warmVAD(m *squelch.Model) error {
	st, err := m.NewStream()
	if err != nil {
		return err
	}
	windows := 0
	err = st.Feed(make([]float32, squelch.SampleRate), func(float32) { windows++ })
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err == nil && windows == 0 {
		err = errors.New("no window ran")
	}
	return err
}

// closeVAD releases the shared Silero model; every stream on it must be closed first.
func (s *Service) closeVAD() error {
	if s.Silero == nil {
		return nil
	}
	err := s.Silero.Close()
	s.Silero = nil
	return err
}
