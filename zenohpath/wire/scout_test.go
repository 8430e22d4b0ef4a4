package wire

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestScoutHello(t *testing.T) {
	trio(t, Scout{Version: 9, What: WhatRouter | WhatPeer}, unhex(t, "01 09 03"), 0, ParseScout)
	trio(t, Scout{Version: 9, What: WhatRouter, ZID: routerZID}, unhex(t, "01 09 79 0123456789abcdef"), 0, ParseScout)
	trio(t, Hello{Version: 9, WhatAmI: WhatAmIRouter, ZID: routerZID, Locators: []string{"tcp/192.168.1.2:7447", "udp/[::1]:7447"}},
		unhex(t, `22 09 70 0123456789abcdef 02 14 "tcp/192.168.1.2:7447" 0e "udp/[::1]:7447"`), 0, ParseHello)
	trio(t, Hello{Version: 9, WhatAmI: WhatAmIPeer, ZID: routerZID}, unhex(t, "02 09 71 0123456789abcdef"), 0, ParseHello)
	// a locator count larger than the remaining bytes is refused before any allocation
	_, _, err := ParseHello(unhex(t, "09 00 01 ffffffff0f"), 0x22)
	require.ErrorIs(t, err, ErrTruncated)
	m, n, err := ParseScouting(unhex(t, "01 09 03"))
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Equal(t, &Scout{Version: 9, What: 3}, m)
	_, _, err = ParseScouting([]byte{0x05})
	require.ErrorIs(t, err, ErrUnknownMessage)
}
