package mqtt

import "errors"

// ErrNoBroker is StartBroker's error in a build without the embedded broker
// (tag nobroker, as the packages are built; see broker.go).
var ErrNoBroker = errors.New("mqtt broker: this build has no embedded broker (built with tag nobroker)")
