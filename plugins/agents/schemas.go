package main

// Input schemas, written out: mail_send's recipient rule needs a root
// not plus if/then/else (never a root oneOf/anyOf/allOf, which the
// Anthropic API refuses), and every string is bounded so oversized input
// is refused by the schema rather than at the host call. The bounds match
// host/internal/mail and host/internal/boardapi.

const schemaMailSend = `{
  "type": "object",
  "properties": {
    "to_agent_id": {
      "type": "string",
      "description": "the recipient agent's id, e.g. your supervisor_id from agent_get_status; never together with to_human",
      "pattern": "^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$",
      "maxLength": 128
    },
    "to_human": {
      "type": "boolean",
      "const": true,
      "description": "true to write to the human inbox (the operator) instead of an agent; never together with to_agent_id, omit it otherwise"
    },
    "subject": {
      "type": "string",
      "description": "one-line subject, 1-500 characters",
      "minLength": 1,
      "maxLength": 500
    },
    "body": {
      "type": "string",
      "description": "the message, 1-65536 characters",
      "minLength": 1,
      "maxLength": 65536
    },
    "in_reply_to": {
      "type": "string",
      "description": "optional: id (UUID) of a mail you sent or received that this one continues; the new mail joins its thread",
      "format": "uuid",
      "pattern": "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
      "maxLength": 36
    }
  },
  "required": ["subject", "body"],
  "additionalProperties": false,
  "not": {"description": "never to_agent_id together with to_human", "required": ["to_agent_id", "to_human"]},
  "if": {"required": ["to_human"]},
  "else": {"description": "without to_human, to_agent_id is required", "required": ["to_agent_id"]}
}`

const schemaListInbox = `{
  "type": "object",
  "properties": {
    "include_read": {
      "type": "boolean",
      "description": "true to list mail already read too; default false (unread only)",
      "default": false
    },
    "limit": {
      "type": "integer",
      "description": "most mails to list, newest first; 1-200, default 50",
      "minimum": 1,
      "maximum": 200,
      "default": 50
    }
  },
  "additionalProperties": false
}`

const schemaMailRead = `{
  "type": "object",
  "properties": {
    "mail_id": {
      "type": "string",
      "description": "id (UUID) of a mail in your inbox, from mail_list_inbox",
      "format": "uuid",
      "pattern": "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
      "maxLength": 36
    }
  },
  "required": ["mail_id"],
  "additionalProperties": false
}`

const schemaMailReply = `{
  "type": "object",
  "properties": {
    "mail_id": {
      "type": "string",
      "description": "id (UUID) of the mail you received and answer, from mail_list_inbox",
      "format": "uuid",
      "pattern": "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
      "maxLength": 36
    },
    "body": {
      "type": "string",
      "description": "the answer, 1-65536 characters; the subject is the original's with Re: added once",
      "minLength": 1,
      "maxLength": 65536
    }
  },
  "required": ["mail_id", "body"],
  "additionalProperties": false
}`

const schemaNoInput = `{"type": "object", "properties": {}, "additionalProperties": false}`

const schemaLogDecision = `{
  "type": "object",
  "properties": {
    "title": {
      "type": "string",
      "description": "the decision in one line, 1-500 characters, e.g. Chose Redis for the cache",
      "minLength": 1,
      "maxLength": 500
    },
    "body": {
      "type": "string",
      "description": "why: the options weighed and the reason, 1-65536 characters",
      "minLength": 1,
      "maxLength": 65536
    }
  },
  "required": ["title", "body"],
  "additionalProperties": false
}`
