package acp

// Version is the version sessionkit reports as agentInfo.version (the
// agent) and clientInfo.version (the client).
const Version = "0.1.0"
