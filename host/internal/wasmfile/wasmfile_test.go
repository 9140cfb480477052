package wasmfile

import (
	"bytes"
	"context"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// module assembles a binary from sections given as id + payload.
func module(secs ...[]byte) []byte {
	out := append([]byte(nil), magic...)
	for _, s := range secs {
		out = appendSection(out, s[0], s[1:])
	}
	return out
}

func sec(id byte, payload ...byte) []byte { return append([]byte{id}, payload...) }

func str(s string) []byte { return append(appendULEB(nil, uint64(len(s))), s...) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func vec(items ...[]byte) []byte { return cat(appendULEB(nil, uint64(len(items))), cat(items...)) }

func body(locals []byte, code ...byte) []byte {
	b := cat(locals, code)
	return cat(appendULEB(nil, uint64(len(b))), b)
}

// testModule imports env.f (i32)->i32 and defines:
//
//	count(n) = loop i++ while i < n; return double(i)
//	double(x) = env.f(x)
//	viaTable(x) = table[1](x)   (table = [count, double])
func testModule() []byte {
	typeVoidI32 := []byte{0x60, 0x00, 0x01, 0x7f}
	typeI32I32 := []byte{0x60, 0x01, 0x7f, 0x01, 0x7f}
	return module(
		sec(1, vec(typeVoidI32, typeI32I32)...),
		sec(2, vec(cat(str("env"), str("f"), []byte{0x00, 0x01}))...),
		sec(3, vec([]byte{1}, []byte{1}, []byte{1})...),
		sec(4, vec([]byte{0x70, 0x00, 0x02})...), // funcref table, min 2
		sec(7, vec(
			cat(str("count"), []byte{0x00, 0x01}),
			cat(str("double"), []byte{0x00, 0x02}),
			cat(str("viaTable"), []byte{0x00, 0x03}),
		)...),
		sec(9, vec(cat([]byte{0x00, 0x41, 0x00, 0x0b}, vec([]byte{1}, []byte{2})))...),
		sec(10, vec(
			body(vec([]byte{0x01, 0x7f}),
				0x03, 0x40, // loop
				0x20, 0x01, 0x41, 0x01, 0x6a, 0x21, 0x01, // i++
				0x20, 0x01, 0x20, 0x00, 0x49, 0x0d, 0x00, // br_if i < n
				0x0b,
				0x20, 0x01, 0x10, 0x02, // call double
				0x0b),
			body(vec(), 0x20, 0x00, 0x10, 0x00, 0x0b),                   // call env.f
			body(vec(), 0x20, 0x00, 0x41, 0x01, 0x11, 0x01, 0x00, 0x0b), // call_indirect type 1
		)...),
		cat([]byte{0}, str("plugboard.test"), []byte("payload")),
	)
}

func TestInstrumentRunsAndYields(t *testing.T) {
	ctx := context.Background()
	bin, err := Instrument(testModule())
	if err != nil {
		t.Fatal(err)
	}
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	if _, err := r.NewHostModuleBuilder("env").NewFunctionBuilder().
		WithGoFunction(api.GoFunc(func(_ context.Context, s []uint64) { s[0] = s[0] * 2 }),
			[]api.ValueType{api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32}).
		Export("f").Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	yields := 0
	if _, err := r.NewHostModuleBuilder(YieldModule).NewFunctionBuilder().
		WithGoFunction(api.GoFunc(func(_ context.Context, s []uint64) { yields++; s[0] = YieldBudget }),
			nil, []api.ValueType{api.ValueTypeI32}).
		Export(YieldName).Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	mod, err := r.Instantiate(ctx, bin)
	if err != nil {
		t.Fatalf("instrumented module does not instantiate: %v", err)
	}
	res, err := mod.ExportedFunction("count").Call(ctx, 25000)
	if err != nil || res[0] != 50000 {
		t.Fatalf("count(25000) = %v, %v; want 50000", res, err)
	}
	if yields != 2 {
		t.Errorf("yield called %d times over 25000 iterations, want 2 (budget %d)", yields, YieldBudget)
	}
	res, err = mod.ExportedFunction("viaTable").Call(ctx, 21)
	if err != nil || res[0] != 42 {
		t.Fatalf("viaTable(21) = %v, %v; want 42 (element segment renumbered?)", res, err)
	}
	if content, ok, _ := CustomSection(bin, "plugboard.test"); !ok || string(content) != "payload" {
		t.Errorf("custom section lost: %q %v", content, ok)
	}
	if _, err := Instrument(bin); err == nil {
		t.Error("instrumenting twice was accepted")
	}
}

func TestCustomSectionRoundTrip(t *testing.T) {
	bin := testModule()
	if _, ok, err := CustomSection(bin, "plugboard.manifest"); ok || err != nil {
		t.Fatalf("fresh module has a manifest: %v %v", ok, err)
	}
	one, err := SetCustomSection(bin, "plugboard.manifest", []byte(`{"v":1}`))
	if err != nil {
		t.Fatal(err)
	}
	two, err := SetCustomSection(one, "plugboard.manifest", []byte(`{"v":2}`))
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := CustomSection(two, "plugboard.manifest")
	if err != nil || !ok || string(got) != `{"v":2}` {
		t.Fatalf("CustomSection = %q %v %v", got, ok, err)
	}
	if len(two) != len(one) {
		t.Errorf("replacing the section grew the module from %d to %d bytes", len(one), len(two))
	}
	info, err := Parse(two)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Imports) != 1 || info.Imports[0].Module != "env" || info.Imports[0].Kind != KindFunc {
		t.Errorf("imports = %+v", info.Imports)
	}
	if len(info.Exports) != 3 || info.Exports[2].Name != "viaTable" {
		t.Errorf("exports = %+v", info.Exports)
	}
	if _, err := wazero.NewRuntime(context.Background()).CompileModule(context.Background(), two); err != nil {
		t.Errorf("module with the section no longer compiles: %v", err)
	}
}

func TestParseRejectsGarbage(t *testing.T) {
	for _, b := range [][]byte{nil, []byte("not wasm at all"), append(append([]byte(nil), magic...), 0x01, 0xff, 0xff, 0xff, 0xff, 0x0f)} {
		if _, err := Parse(b); err == nil {
			t.Errorf("Parse(%q) accepted garbage", b)
		}
		if _, err := Instrument(b); err == nil {
			t.Errorf("Instrument(%q) accepted garbage", b)
		}
	}
}

func TestReadCustomSectionAgreesWithCustomSection(t *testing.T) {
	bin, err := SetCustomSection(testModule(), "plugboard.manifest", bytes.Repeat([]byte("m"), 1000))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"plugboard.manifest", "plugboard.test", "absent"} {
		want, wantOK, _ := CustomSection(bin, name)
		got, ok, err := ReadCustomSection(bytes.NewReader(bin), int64(len(bin)), name)
		if err != nil || ok != wantOK || !bytes.Equal(got, want) {
			t.Errorf("%s: got %q %v %v, want %q %v", name, got, ok, err, want, wantOK)
		}
	}
	if _, _, err := ReadCustomSection(bytes.NewReader(bin[:len(bin)-3]), int64(len(bin)-3), "x"); err == nil {
		t.Error("a truncated module was accepted")
	}
}

func TestParseSignatures(t *testing.T) {
	info, err := Parse(testModule())
	if err != nil {
		t.Fatal(err)
	}
	voidI32 := FuncType{Results: []byte{0x7f}}
	i32I32 := FuncType{Params: []byte{0x7f}, Results: []byte{0x7f}}
	if len(info.Types) != 2 || !info.Types[0].Equal(voidI32) || !info.Types[1].Equal(i32I32) {
		t.Fatalf("types = %+v", info.Types)
	}
	if info.Imports[0].Type != 1 || len(info.Funcs) != 3 || info.HasStart {
		t.Fatalf("imports %+v, funcs %v, start %v", info.Imports, info.Funcs, info.HasStart)
	}
	e, ok := info.Export("double")
	if !ok || e.Index != 2 {
		t.Fatalf("export double = %+v, %v", e, ok)
	}
	// Index 0 is the import env.f, 2 the second defined function.
	for idx, want := range map[uint32]FuncType{0: i32I32, 2: i32I32} {
		if got, ok := info.FuncType(idx); !ok || !got.Equal(want) {
			t.Errorf("FuncType(%d) = %+v, %v", idx, got, ok)
		}
	}
	if _, ok := info.FuncType(4); ok {
		t.Error("FuncType past the last function")
	}
	if _, ok := info.Export("missing"); ok {
		t.Error("found a missing export")
	}
}
