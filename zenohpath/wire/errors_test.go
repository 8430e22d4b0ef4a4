package wire_test

import (
	"errors"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

func asWireError(err error, we **wire.Error) bool { return errors.As(err, we) }
