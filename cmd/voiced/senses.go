package main

import (
	"flag"

	"github.com/voiced/voiced/session"
)

// sensesFlags are what the mind sees and hears beside the words (issue 27): the camera frames'
// bounds (input_video_buffer.append) and the omni setting. session.SensesConfig validates them.
type sensesFlags struct {
	mindAudio                 string
	mindAudioRate             int
	maxFrameBytes, framesKept int
	frameRate                 float64
}

func (s *sensesFlags) flags(fs *flag.FlagSet) {
	fs.StringVar(&s.mindAudio, "mind-audio-input", "off", "an omni mind: off (it reads the transcript), replace (it hears the user's newest turn as input_audio WAV instead, and is asked without waiting for the final transcript) or beside (the transcript and the audio)")
	fs.IntVar(&s.mindAudioRate, "mind-audio-rate", 16000, "the rate of the audio --mind-audio-input sends: 16000 or 24000")
	fs.IntVar(&s.maxFrameBytes, "max-video-frame-bytes", session.DefaultMaxFrameBytes, "the largest input_video_buffer.append frame (decoded PNG/JPEG bytes); past it video_frame_too_large")
	fs.Float64Var(&s.frameRate, "video-frame-rate", session.DefaultFrameRate, "input_video_buffer.append frames a conversation may send per second, averaged; past it video_frame_rate_exceeded")
	fs.IntVar(&s.framesKept, "video-frames-kept", session.DefaultFramesKept, "how many of the newest frames go to the mind with the next user turn (1..8; also the frame rate's burst)")
}

func (s *sensesFlags) config() session.SensesConfig {
	return session.SensesConfig{MindAudio: session.MindAudio(s.mindAudio), MindAudioRate: s.mindAudioRate,
		MaxFrameBytes: s.maxFrameBytes, FrameRate: s.frameRate, FramesKept: s.framesKept}
}
