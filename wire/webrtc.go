package wire

// The playback buffer's events a WebRTC (or SIP) call sends, where the server plays the reply in
// real time; over a WebSocket the client holds the audio and none of these is sent. Both dialects
// use the same names and shape.

// OutputAudioBufferStarted: the server began playing a response's audio on the call.
type OutputAudioBufferStarted struct {
	ResponseID string `json:"response_id"`
}

func (OutputAudioBufferStarted) EventName(Dialect) string { return "output_audio_buffer.started" }
func (ev OutputAudioBufferStarted) body(Dialect) any      { return ev }

// OutputAudioBufferStopped: everything queued was played (the buffer ran empty).
type OutputAudioBufferStopped struct {
	ResponseID string `json:"response_id"`
}

func (OutputAudioBufferStopped) EventName(Dialect) string { return "output_audio_buffer.stopped" }
func (ev OutputAudioBufferStopped) body(Dialect) any      { return ev }
