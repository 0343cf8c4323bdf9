package wire

import "testing"

// The session's refusals carry the codes and texts of docs/realtime-protocol.md §9.
func TestSessionRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		err           *Error
		code, message string
	}{
		{"commit empty", ErrCommitEmpty(0, "e"), CodeCommitEmpty,
			"Error committing input audio buffer: buffer too small. Expected at least 100ms of audio, but buffer only has 0.00ms of audio."},
		{"active response", ErrActiveResponse("resp_X", "e"), CodeActiveResponse,
			"Conversation already has an active response in progress: resp_X. Wait until the response is finished before creating a new one."},
		{"cancel not active", ErrCancelNotActive("e"), CodeCancelNotActive, "Cancellation failed: no active response found"},
		{"truncate unknown item", ErrTruncateUnknownItem("x", "e"), CodeTruncateInvalidItemID, "Item with item_id not found: x"},
		{"truncate past the audio", ErrAudioEndTooLong(12950, 13957, "e"), CodeInvalidValue, "Audio content of 12950ms is already shorter than 13957ms"},
		{"session expired", ErrSessionExpired("60 minutes").WithEventID("e"), CodeSessionExpired, "Your session hit the maximum duration of 60 minutes."},
		{"odd pcm16", ErrAudioLength(PCM16, 3, "e"), CodeInvalidValue, "Invalid 'audio': 3 bytes is not a whole number of pcm16 samples (2 bytes each)."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err.Code != tt.code || tt.err.Message != tt.message || tt.err.EventID != "e" || tt.err.Type != TypeInvalidRequest {
				t.Errorf("got %+v", tt.err)
			}
		})
	}
	if e := ErrServer("mind timed out", ""); e.Type != TypeServer || e.Code != CodeServerError {
		t.Errorf("%+v", e)
	}
}

func TestAudioFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		f          AudioFormat
		name       string
		rate, size int
		ms4800     float64
	}{
		{PCM16, "pcm16", 24000, 2, 100},
		{G711Ulaw, "g711_ulaw", 8000, 1, 600},
		{G711Alaw, "g711_alaw", 8000, 1, 600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.f.String() != tt.name || tt.f.SampleRate() != tt.rate || tt.f.BytesPerSample() != tt.size || tt.f.Millis(4800) != tt.ms4800 {
				t.Errorf("%v: %d Hz, %d B, %g ms", tt.f, tt.f.SampleRate(), tt.f.BytesPerSample(), tt.f.Millis(4800))
			}
		})
	}
}
