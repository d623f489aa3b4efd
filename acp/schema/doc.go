// Package schema holds the Agent Client Protocol's wire types as sessionkit
// speaks them (ACP v1, the v2 draft beside it, and the _sessionkit/*
// extension): one Go type per message, with the encoding and decoding rules
// of each field. Package acp sends and reads these types; a program that
// only drives an agent or serves one needs acp, and this package for the
// values it passes (a [ContentBlock], a [ToolCallUpdate], a
// [PermissionOption]).
//
//	u, err := schema.DecodeSessionUpdate(raw)
//	if err != nil {
//		return err // wraps ErrMalformed or ErrInvalidUpdate
//	}
//	if c, ok := u.(*schema.CompactionUpdate); ok {
//		fmt.Println(c.CompactionID, c.Status)
//	}
//
// # Unions
//
// Unions (SessionUpdate, ContentBlock, ToolCallContent) are decoded by their
// discriminator, never by shape; unknown kinds are kept verbatim
// ([UnknownSessionUpdate], [UnknownVariant]). v1 and v2 differ in a few
// updates: [DecodeSessionUpdate] reads v1, [DecodeSessionUpdateV2] reads
// v2, and the V2 twins are the v2 shapes of the types whose v1 shape
// differs.
//
// # Optional fields
//
// Nullable patch fields are [Optional] values: the zero value is omitted,
// [Null] clears, [Value] replaces; they never encode null or [] by
// accident. Required fields are plain fields; optional fields whose zero
// means absent use the omitzero tag option.
//
// # Extension
//
// The _sessionkit/compact and _sessionkit/uncompact requests and their
// _finished notifications ([MethodCompact], [CompactFinishedParams],
// [WireResult]) are in extension.go.
//
// # Golden files
//
// testdata holds one golden file per wire shape; go test -update rewrites
// them.
package schema
