package runtime

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include "onnxruntime_c_api.h"

// The OrtApi of the library onnxruntime_go loaded (the same handle: dlopen of a loaded path).
static const OrtApi *vb_api = NULL;

static const char *vb_init(const char *path) {
	void *h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
	if (!h) return "the onnx runtime library is not loaded at that path";
	typedef const OrtApiBase *(*base_fn)(void);
	base_fn f = (base_fn) dlsym(h, "OrtGetApiBase");
	if (!f) return "OrtGetApiBase not found in the library";
	vb_api = f()->GetApi(ORT_API_VERSION);
	if (!vb_api) return "the library does not serve the C API version onnxruntime_go was built for";
	return NULL;
}

// vb_err turns a status into a malloc'd message (NULL when OK) and releases the status.
static char *vb_err(OrtStatus *st) {
	if (!st) return NULL;
	char *m = strdup(vb_api->GetErrorMessage(st));
	vb_api->ReleaseStatus(st);
	return m;
}

static char *vb_create_binding(OrtSession *s, OrtIoBinding **b) { return vb_err(vb_api->CreateIoBinding(s, b)); }
static void vb_release_binding(OrtIoBinding *b) { vb_api->ReleaseIoBinding(b); }
static char *vb_bind_input(OrtIoBinding *b, const char *name, const OrtValue *v) { return vb_err(vb_api->BindInput(b, name, v)); }
static char *vb_bind_output_to(OrtIoBinding *b, const char *name, const OrtMemoryInfo *mi) { return vb_err(vb_api->BindOutputToDevice(b, name, mi)); }
static void vb_clear(OrtIoBinding *b) { vb_api->ClearBoundInputs(b); vb_api->ClearBoundOutputs(b); }
static void vb_clear_outputs(OrtIoBinding *b) { vb_api->ClearBoundOutputs(b); }
static void vb_release_value(OrtValue *v) { vb_api->ReleaseValue(v); }

// vb_run runs the session on its binding and hands back the bound outputs, in bind order, as new
// references to ONNX Runtime's own values (no copy).
static char *vb_run(OrtSession *s, const OrtRunOptions *ro, OrtIoBinding *b, OrtValue **out, size_t n) {
	char *e = vb_err(vb_api->RunWithBinding(s, ro, b));
	if (e) return e;
	OrtAllocator *alloc = NULL;
	e = vb_err(vb_api->GetAllocatorWithDefaultOptions(&alloc));
	if (e) return e;
	OrtValue **vals = NULL;
	size_t count = 0;
	e = vb_err(vb_api->GetBoundOutputValues(b, alloc, &vals, &count));
	if (e) return e;
	if (count != n) {
		for (size_t i = 0; i < count; i++) vb_api->ReleaseValue(vals[i]);
		if (vals) free(vb_err(vb_api->AllocatorFree(alloc, vals)));
		return strdup("the binding returned another number of outputs than were bound");
	}
	for (size_t i = 0; i < n; i++) out[i] = vals[i];
	if (vals) return vb_err(vb_api->AllocatorFree(alloc, vals));
	return NULL;
}

// vb_tensor_info is a tensor's element type, shape (ORT's own array), data pointer, and whether
// the data is in host memory; err is a malloc'd message or NULL. Returned by value: no Go
// pointer crosses, so reading a tensor allocates nothing on the Go side.
typedef struct {
	ONNXTensorElementDataType type;
	const int64_t *dims;
	size_t ndims;
	void *data;
	int host;
	char *err;
} vb_tensor_info;

static vb_tensor_info vb_tensor(OrtValue *v) {
	vb_tensor_info t;
	memset(&t, 0, sizeof t);
	t.err = vb_err(vb_api->GetTensorElementTypeAndShapeDataReference(v, &t.type, &t.dims, &t.ndims));
	if (t.err) return t;
	const OrtMemoryInfo *mi = NULL;
	t.err = vb_err(vb_api->GetTensorMemoryInfo(v, &mi));
	if (t.err) return t;
	OrtMemoryInfoDeviceType dt;
	vb_api->MemoryInfoGetDeviceType(mi, &dt);
	t.host = dt == OrtMemoryInfoDeviceType_CPU;
	t.err = vb_err(vb_api->GetTensorMutableData(v, &t.data));
	return t;
}

static char *vb_create_memory(const char *name, int id, OrtMemoryInfo **out) {
	return vb_err(vb_api->CreateMemoryInfo(name, OrtArenaAllocator, id, OrtMemTypeDefault, out));
}
static void vb_release_memory(OrtMemoryInfo *mi) { vb_api->ReleaseMemoryInfo(mi); }
*/
import "C"

import (
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	ort "github.com/yalue/onnxruntime_go"
)

// I/O binding (issue 26 item 4). onnxruntime_go v1.27.0's IoBinding binds outputs only to
// preallocated values and copies every bound output into Go memory when read back; this small
// wrapper over the C API the module vendors adds what a decode loop needs: an output bound to a
// device's memory (ONNX Runtime allocates it there), the outputs handed back as ONNX Runtime's own
// values (Value, no copy) that can be bound as the next run's inputs, and a run with RunOptions
// (so Terminate still stops it). It reaches the session's, value's and run options' C pointers
// inside onnxruntime_go's structs; checkBindLayout refuses at Open if that layout changed.

// ErrBinding is wrapped by every I/O binding failure.
var ErrBinding = errors.New("onnx runtime i/o binding")

func bindErr(msg *C.char) error {
	if msg == nil {
		return nil
	}
	defer C.free(unsafe.Pointer(msg))
	return fmt.Errorf("%w: %s", ErrBinding, C.GoString(msg))
}

// openBinding points the wrapper at the library onnxruntime_go opened from path.
func openBinding(path string) error {
	if err := checkBindLayout(); err != nil {
		return err
	}
	cPath := C.CString(path)
	defer C.free(unsafe.Pointer(cPath))
	if msg := C.vb_init(cPath); msg != nil {
		return fmt.Errorf("%w: %s: %s", ErrBinding, path, C.GoString(msg))
	}
	return nil
}

// checkBindLayout proves the fields this file reads are where it reads them: the first field of
// each struct, a pointer.
func checkBindLayout() error {
	for _, c := range []struct {
		t     reflect.Type
		field string
	}{
		{reflect.TypeOf(ort.ValueInternalData{}), "ortValue"},
		{reflect.TypeOf(ort.DynamicAdvancedSession{}), "s"},
		{reflect.TypeOf(ort.AdvancedSession{}), "ortSession"},
		{reflect.TypeOf(ort.RunOptions{}), "o"},
	} {
		if c.t.NumField() == 0 || c.t.Field(0).Name != c.field || c.t.Field(0).Offset != 0 || c.t.Field(0).Type.Kind() != reflect.Pointer {
			return fmt.Errorf("%w: onnxruntime_go's %s no longer starts with the pointer %s (speechcore/runtime/bind.go needs updating)", ErrBinding, c.t, c.field)
		}
	}
	return nil
}

func cValue(v ort.Value) *C.OrtValue { return *(**C.OrtValue)(unsafe.Pointer(v.GetInternals())) }

func cSession(s *ort.DynamicAdvancedSession) *C.OrtSession {
	adv := *(**ort.AdvancedSession)(unsafe.Pointer(s))
	return *(**C.OrtSession)(unsafe.Pointer(adv))
}

func cRunOptions(ro *ort.RunOptions) *C.OrtRunOptions {
	if ro == nil {
		return nil
	}
	return *(**C.OrtRunOptions)(unsafe.Pointer(ro))
}

// Memory says where ONNX Runtime allocates a bound output (an OrtMemoryInfo). Release it after
// the bindings that use it.
type Memory struct {
	p    *C.OrtMemoryInfo
	name string
	id   int
}

// Names of ONNX Runtime's allocators (its CPU and CUDA constants).
const (
	memoryCPU  = "Cpu"
	memoryCUDA = "Cuda"
)

func newMemory(name string, id int) (*Memory, error) {
	cName := C.CString(name)
	defer C.free(unsafe.Pointer(cName))
	m := &Memory{name: name, id: id}
	if err := bindErr(C.vb_create_memory(cName, C.int(id), &m.p)); err != nil {
		return nil, fmt.Errorf("memory info %s:%d: %w", name, id, err)
	}
	return m, nil
}

// String is the allocator and device id, e.g. "Cpu:0" or "Cuda:0".
func (m *Memory) String() string { return fmt.Sprintf("%s:%d", m.name, m.id) }

// OnDevice reports whether the memory is not the host's.
func (m *Memory) OnDevice() bool { return m.name != memoryCPU }

// Release frees the memory info.
func (m *Memory) Release() {
	if m != nil && m.p != nil {
		C.vb_release_memory(m.p)
		m.p = nil
	}
}

// HostMemory is ONNX Runtime's CPU allocator: where outputs the host reads (logits) are bound.
func (e *Env) HostMemory() (*Memory, error) { return newMemory(memoryCPU, 0) }

// CacheMemory is where tensors that stay with the model between runs (a decoder's KV cache, an
// encoder's output) are bound: the execution provider's device (CUDA's device memory under
// Device "cuda", host memory under "cpu"), or host memory when Config.CacheMemory is "cpu".
func (e *Env) CacheMemory() (*Memory, error) {
	if e.cfg.Device == DeviceCUDA && e.cfg.CacheMemory != CacheMemoryCPU {
		return newMemory(memoryCUDA, e.cfg.CUDADeviceID)
	}
	return newMemory(memoryCPU, 0)
}

// Input is a value to bind as an input: a Go-created tensor's (InputOf; the tensor owns it and
// must outlive the binding's use) or a bound run's Value (Value.Input). Comparable: the same
// Input is the same ONNX Runtime value.
type Input struct{ p *C.OrtValue }

// InputOf borrows a Go-created tensor's ONNX Runtime value for binding.
func InputOf(v ort.Value) Input { return Input{cValue(v)} }

// Input borrows v for binding (no new reference: keep v until the binding is cleared or rebound).
func (v Value) Input() Input { return Input{v.p} }

// Value is one of ONNX Runtime's own values handed back by a bound run: no Go copy of its data
// exists. Release it once; bind it as an input of a later run without copying.
type Value struct{ p *C.OrtValue }

// IsNil reports whether v holds no value.
func (v Value) IsNil() bool { return v.p == nil }

// Release drops this reference (ONNX Runtime frees the buffer when none is left).
func (v *Value) Release() {
	if v.p != nil {
		C.vb_release_value(v.p)
		v.p = nil
	}
}

// Float32s returns a float32 tensor's data and shape as views on ONNX Runtime's memory, valid
// until v is released. It fails for a tensor in device memory (read those through a host-bound
// output) or of another element type.
func (v Value) Float32s() ([]float32, []int64, error) {
	if v.p == nil {
		return nil, nil, fmt.Errorf("%w: nil value", ErrBinding)
	}
	t := C.vb_tensor(v.p)
	if err := bindErr(t.err); err != nil {
		return nil, nil, err
	}
	if t._type != C.ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT {
		return nil, nil, fmt.Errorf("%w: tensor element type %d, want float32", ErrBinding, int(t._type))
	}
	if t.host == 0 {
		return nil, nil, fmt.Errorf("%w: tensor is in device memory", ErrBinding)
	}
	data := t.data
	shape := unsafe.Slice((*int64)(unsafe.Pointer(t.dims)), int(t.ndims))
	count := 1
	for _, d := range shape {
		count *= int(d)
	}
	if count == 0 || data == nil {
		return nil, shape, nil
	}
	return unsafe.Slice((*float32)(data), count), shape, nil
}

// Binding is an ONNX Runtime I/O binding on one session: inputs bound to values, outputs bound to
// a Memory where ONNX Runtime allocates them. Owned by one goroutine.
type Binding struct {
	s     *C.OrtSession
	b     *C.OrtIoBinding
	names map[string]*C.char // every declared input and output name, converted once
	nOut  int                // outputs bound since the last ClearOutputs
}

// NewBinding creates an I/O binding on the session. Destroy it before the session.
func (s *Session) NewBinding() (*Binding, error) {
	b := &Binding{s: cSession(s.DynamicAdvancedSession), names: map[string]*C.char{}}
	if err := bindErr(C.vb_create_binding(b.s, &b.b)); err != nil {
		return nil, fmt.Errorf("%s: %w", s.Path, err)
	}
	for _, io := range append(append([]ort.InputOutputInfo(nil), s.Inputs...), s.Outputs...) {
		if _, ok := b.names[io.Name]; !ok {
			b.names[io.Name] = C.CString(io.Name)
		}
	}
	return b, nil
}

func (b *Binding) name(n string) (*C.char, error) {
	c, ok := b.names[n]
	if !ok {
		return nil, fmt.Errorf("%w: the session declares no %q", ErrBinding, n)
	}
	return c, nil
}

// BindInput binds in to the named input, without a copy when it lies where the session reads it.
// Under a device provider ONNX Runtime copies a host tensor to the device here, at bind time:
// bind a Go tensor again after changing its data.
func (b *Binding) BindInput(name string, in Input) error {
	c, err := b.name(name)
	if err != nil {
		return err
	}
	return bindErr(C.vb_bind_input(b.b, c, in.p))
}

// BindOutput binds the named output to mem: ONNX Runtime allocates it there at each run.
func (b *Binding) BindOutput(name string, mem *Memory) error {
	c, err := b.name(name)
	if err != nil {
		return err
	}
	if err := bindErr(C.vb_bind_output_to(b.b, c, mem.p)); err != nil {
		return err
	}
	b.nOut++
	return nil
}

// ClearOutputs unbinds every output (and drops the binding's references to the last run's).
func (b *Binding) ClearOutputs() {
	C.vb_clear_outputs(b.b)
	b.nOut = 0
}

// Clear unbinds every input and output, dropping the binding's references to their values.
func (b *Binding) Clear() {
	C.vb_clear(b.b)
	b.nOut = 0
}

// Run runs the session on the binding with ro (nil for none) and puts the bound outputs, in the
// order they were bound, in out (len(out) must be the number bound). The caller releases each.
func (b *Binding) Run(ro *ort.RunOptions, out []Value) error {
	if len(out) != b.nOut || len(out) == 0 {
		return fmt.Errorf("%w: %d outputs bound, room for %d", ErrBinding, b.nOut, len(out))
	}
	return bindErr(C.vb_run(b.s, cRunOptions(ro), b.b, (**C.OrtValue)(unsafe.Pointer(&out[0])), C.size_t(len(out))))
}

// Destroy releases the binding (and its references to bound values).
func (b *Binding) Destroy() {
	if b.b != nil {
		C.vb_release_binding(b.b)
		b.b = nil
	}
	for _, c := range b.names {
		C.free(unsafe.Pointer(c))
	}
	b.names = nil
}
