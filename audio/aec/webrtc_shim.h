#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
typedef struct wap wap;
wap *wap_new(int rate, int echo, int ns_level, int delay_ms);
void wap_free(wap *w);
int wap_frame(wap *w, const int16_t *mic, const int16_t *ref, int16_t *out, int delay_ms);
#ifdef __cplusplus
}
#endif
