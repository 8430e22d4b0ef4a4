package zvec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const sample = `# zenoh-pico wire test vector
# scenario: tiny
# event: ms=0 after line 0: TCP accept (connection 1)
# expect: D>G line 1 = KEEP_ALIVE
# expect: G>D line 2 = CLOSE session reason=5(EXPIRED)
0 D>G 04
7 G>D 2305
# pico-out: bye
`

func TestParse(t *testing.T) {
	f, err := Parse(strings.NewReader(sample))
	require.NoError(t, err)
	require.Len(t, f.Lines, 2)
	require.Equal(t, Line{N: 2, Source: 7, Ms: 7, Dir: GatewayToDevice, Batch: []byte{0x23, 0x05}, Expect: "CLOSE session reason=5(EXPIRED)"}, f.Lines[1])
	require.Equal(t, []string{"bye"}, f.PicoOut)
	require.Equal(t, []string{"tiny"}, f.Headers["scenario"])
	require.True(t, f.NewConnectionAfter(0))
	require.False(t, f.NewConnectionAfter(1))

	d := NewDescriber()
	for _, l := range f.Lines {
		got, err := d.Batch(l.Dir, l.Batch)
		require.NoError(t, err)
		require.Equal(t, []string{l.Expect}, got)
	}

	for _, bad := range []string{
		"0 D>G zz\n",
		"0 X>Y 04\n",
		"x D>G 04\n",
		"0 D>G\n",
		"# expect: D>G line x = KEEP_ALIVE\n",
		"# expect: G>D line 1 = KEEP_ALIVE\n0 D>G 04\n",
		"# event: nonsense\n",
		"# expect: D>G line 2 = KEEP_ALIVE\n0 D>G 04\n",
		"# expect: D>G line 1 = KEEP_ALIVE\n# expect: D>G line 1 = KEEP_ALIVE\n0 D>G 04\n",
	} {
		_, err := Parse(strings.NewReader(bad))
		require.Error(t, err, bad)
	}
}

func TestParseLenient(t *testing.T) {
	f, err := ParseLenient(strings.NewReader("# expect: D>G line 1 = KEEP_ALIVE\n# expect: X line 1\n0 D>G 04\n# expect: D>G line 3 = KEEP_ALIVE\n"))
	require.NoError(t, err)
	require.Equal(t, 3, f.Expects)
	require.Equal(t, "KEEP_ALIVE", f.Lines[0].Expect)
	require.Len(t, f.ExpectErrors, 2)
	require.Equal(t, 2, f.ExpectErrors[0].Source)
	require.Equal(t, "line 4: # expect: data line 3 does not exist (the file has 1 data lines)", f.ExpectErrors[1].Error())

	_, err = ParseHex(strings.NewReader("0 X>Y 0000\n"))
	require.EqualError(t, err, `line 1: direction "X>Y" (want D>G or G>D)`)
}

func TestParseHex(t *testing.T) {
	ls, err := ParseHex(strings.NewReader("# c\n04\n\n23 05\n5 D>G 04\n"))
	require.NoError(t, err)
	require.Len(t, ls, 3)
	require.Equal(t, []byte{0x23, 0x05}, ls[1].Batch)
	require.Equal(t, Direction(""), ls[1].Dir)
	require.Equal(t, DeviceToGateway, ls[2].Dir)
	require.Equal(t, 5, ls[2].Ms)
	_, err = ParseHex(strings.NewReader("0g\n"))
	require.Error(t, err)
}

func TestBytes(t *testing.T) {
	require.Equal(t, `"hi"`, Bytes([]byte("hi")))
	require.Equal(t, `""`, Bytes(nil))
	require.Equal(t, `"a"x100`, Bytes([]byte(strings.Repeat("a", 100))))
	require.Equal(t, "hex:0101", Bytes([]byte{1, 1}))
	long := strings.Repeat("0123456789", 10)
	require.Equal(t, `"`+long[:48]+`..."`, Bytes([]byte(long)))
	require.Equal(t, "hex:"+strings.Repeat("00", 64)+"...", Bytes(make([]byte, 100)))
}

func TestDescriberScopesAndErrors(t *testing.T) {
	d := NewDescriber()
	// G declares id 7 = "demo", then pushes with scope 7 (M=1); D reuses it with M=0
	out, err := d.Batch(GatewayToDevice, []byte("\x25\x00\x1e\x20\x07\x00\x04demo"))
	require.NoError(t, err)
	require.Equal(t, []string{`FRAME R sn=0: DECLARE DeclareKeyExpr id=7 key="demo" (scope 0, N)`}, out)
	out, err = d.Batch(DeviceToGateway, []byte("\x25\x01\x3d\x07\x02/x\x01\x00"))
	require.NoError(t, err)
	require.Equal(t, []string{`FRAME R sn=1: PUSH key="demo/x" (scope 7, N, suffix="/x") PUT payload="" (0 B)`}, out)
	out, err = d.Batch(DeviceToGateway, []byte("\x25\x01\x5d\x09\x01\x00"))
	require.NoError(t, err)
	require.Equal(t, []string{`FRAME R sn=1: PUSH key="<unknown scope 9>" (scope 9, M) PUT payload="" (0 B)`}, out)
	// decode error inside a frame
	out, err = d.Batch(DeviceToGateway, []byte("\x25\x01\x1a\x01\x5d"))
	require.Error(t, err)
	require.Equal(t, []string{"FRAME R sn=1: (2 network msgs) RESPONSE_FINAL rid=1 ; <decode error>"}, out)
}

func TestFindTestdataEnv(t *testing.T) {
	dir := t.TempDir()
	td := filepath.Join(dir, "testdata", "zenoh-pico")
	require.NoError(t, os.MkdirAll(td, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(td, "a.zvec"), []byte(sample), 0o644))
	t.Setenv(EnvShared, dir)
	got, err := FindTestdata()
	require.NoError(t, err)
	require.Equal(t, td, got)
	t.Setenv(EnvShared, td)
	got, err = FindTestdata()
	require.NoError(t, err)
	require.Equal(t, td, got)
	t.Setenv(EnvShared, filepath.Join(dir, "nope"))
	_, err = FindTestdata()
	require.Error(t, err)
}
