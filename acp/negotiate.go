package acp

// Version is the version sessionkit reports as agentInfo.version (the
// agent) and clientInfo.version (the client).
const Version = "0.1.0"

// requestedVersion is the protocolVersion member of an initialize request.
type requestedVersion struct {
	ProtocolVersion ProtocolVersion `json:"protocolVersion" acp:"required"`
}

// UnmarshalJSON decodes v; errors wrap [ErrMalformed].
func (v *requestedVersion) UnmarshalJSON(data []byte) error { return decodeObject(data, v) }
