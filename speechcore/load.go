package speechcore

import (
	"context"
	"fmt"

	"github.com/voiced/voiced/speechcore/assets"
	"github.com/voiced/voiced/speechcore/kokoro"
	"github.com/voiced/voiced/speechcore/whisper"
)

// Model names, as the doors' ready frames and /v1/speech/health report them.
const (
	WhisperModelID = "whisper-small"
	KokoroModelID  = "kokoro-82m"
)

// loadWhisper loads the mount's Whisper and runs its warm-up pass, filling s.Whisper and
// s.Transcription. Start's loadModels calls it once.
func (s *Service) loadWhisper(ctx context.Context) error {
	e, err := whisper.Load(ctx, s.Env, s.Mount.Path(assets.WhisperDir), whisper.Options{ModelID: WhisperModelID, Language: s.cfg.Language, Decoders: s.cfg.WhisperDecoders})
	if err != nil {
		return fmt.Errorf("load transcription model: %w", err)
	}
	st := e.Stats()
	s.Whisper = e
	s.Transcription = ModelStats{
		Loaded:             true,
		LoadMs:             st.LoadMs,
		WarmupMs:           st.WarmupMs,
		ResidentDeltaBytes: st.ResidentDeltaBytes,
		QueueDepth:         func() int { return e.Stats().QueueDepth },
	}
	s.log.Info("transcription model warm", "model", st.ModelID, "loadMs", st.LoadMs, "warmupMs", st.WarmupMs, "residentDeltaBytes", st.ResidentDeltaBytes)
	return nil
}

// closeWhisper stops the Whisper owner and destroys its sessions; Close calls it before the
// runtime environment closes.
func (s *Service) closeWhisper() error {
	if s.Whisper == nil {
		return nil
	}
	return s.Whisper.Close()
}

// loadKokoro loads the mount's Kokoro and runs its warm-up pass, filling s.Kokoro and s.Synthesis.
func (s *Service) loadKokoro(ctx context.Context) error {
	e, err := kokoro.Load(ctx, s.Env, s.Mount.Path(assets.KokoroDir), kokoro.Options{})
	if err != nil {
		return fmt.Errorf("load synthesis model: %w", err)
	}
	st := e.Stats()
	s.Kokoro = e
	s.Synthesis = ModelStats{
		Loaded:             true,
		LoadMs:             st.LoadMs,
		WarmupMs:           st.WarmupMs,
		ResidentDeltaBytes: st.ResidentDeltaBytes,
		QueueDepth:         e.QueueDepth,
	}
	s.log.Info("synthesis model warm", "model", KokoroModelID, "voices", e.Voices(), "loadMs", st.LoadMs, "warmupMs", st.WarmupMs, "residentDeltaBytes", st.ResidentDeltaBytes)
	return nil
}

// closeKokoro waits for the pass in flight and releases the session; Close calls it before the
// runtime environment closes.
func (s *Service) closeKokoro() error {
	if s.Kokoro == nil {
		return nil
	}
	return s.Kokoro.Close()
}
