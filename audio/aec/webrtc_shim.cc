// A small C shim over libwebrtc-audio-processing's C++ API (Debian
// libwebrtc-audio-processing-dev 0.3): the echo canceller (AEC with the normal filter
// and delay-agnostic estimation) and noise suppression, 10 ms frames at 16 kHz mono.
#include <webrtc/modules/audio_processing/include/audio_processing.h>
#include <webrtc/modules/interface/module_common_types.h>
#include "webrtc_shim.h"

struct wap {
	webrtc::AudioProcessing *apm;
	webrtc::AudioFrame near_, far_;
};

extern "C" wap *wap_new(int rate, int echo, int ns_level, int delay_ms) {
	webrtc::Config cfg;
	// The normal filter (48 ms at 16 kHz), not the extended one: the Filter hands the reference
	// already aligned to the echo's bulk delay (delay.go), and measured on the corpus (LLM.md)
	// the short filter then cancels as well and hides far less double talk.
	cfg.Set<webrtc::ExtendedFilter>(new webrtc::ExtendedFilter(false));
	cfg.Set<webrtc::DelayAgnostic>(new webrtc::DelayAgnostic(true));
	webrtc::AudioProcessing *apm = webrtc::AudioProcessing::Create(cfg);
	if (!apm) return nullptr;
	wap *w = new wap();
	w->apm = apm;
	if (echo) {
		apm->echo_cancellation()->enable_drift_compensation(false);
		apm->echo_cancellation()->set_suppression_level(webrtc::EchoCancellation::kHighSuppression);
		apm->echo_cancellation()->Enable(true);
	}
	if (ns_level >= 0) {
		apm->noise_suppression()->set_level((webrtc::NoiseSuppression::Level)ns_level);
		apm->noise_suppression()->Enable(true);
	}
	apm->high_pass_filter()->Enable(echo || ns_level >= 0);
	(void)delay_ms;
	for (webrtc::AudioFrame *f : {&w->near_, &w->far_}) {
		f->sample_rate_hz_ = rate;
		f->num_channels_ = 1;
		f->samples_per_channel_ = rate / 100;
	}
	return w;
}

extern "C" void wap_free(wap *w) {
	delete w->apm;
	delete w;
}

extern "C" int wap_frame(wap *w, const int16_t *mic, const int16_t *ref, int16_t *out, int delay_ms) {
	size_t n = w->near_.samples_per_channel_;
	if (ref) {
		memcpy(w->far_.data_, ref, n * sizeof(int16_t));
		int r = w->apm->ProcessReverseStream(&w->far_);
		if (r) return r;
		w->apm->set_stream_delay_ms(delay_ms);
	}
	memcpy(w->near_.data_, mic, n * sizeof(int16_t));
	int r = w->apm->ProcessStream(&w->near_);
	memcpy(out, w->near_.data_, n * sizeof(int16_t));
	return r;
}
