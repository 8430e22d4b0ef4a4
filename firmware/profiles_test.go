package firmware

import (
	"io/fs"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestProfilesEmbedded(t *testing.T) {
	plats, err := fs.Glob(Profiles, "platforms/*.toml")
	require.NoError(t, err)
	require.Len(t, plats, 7)
	boards, err := fs.Glob(Profiles, "boards/*/*.toml")
	require.NoError(t, err)
	require.Len(t, boards, 7)
	c, err := Catalog()
	require.NoError(t, err)
	require.Len(t, c.Platforms(), 7)
	require.Len(t, c.Boards(), 7)
	c2, err := Catalog()
	require.NoError(t, err)
	require.Same(t, c, c2) // loaded once
}
