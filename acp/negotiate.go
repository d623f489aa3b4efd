package acp

// requestedVersion is the protocolVersion member of an initialize request.
type requestedVersion struct {
	ProtocolVersion ProtocolVersion `json:"protocolVersion" acp:"required"`
}

// UnmarshalJSON decodes v; errors wrap [ErrMalformed].
func (v *requestedVersion) UnmarshalJSON(data []byte) error { return decodeObject(data, v) }
