'use strict'

// JSON Schemas for fastify's compiled response serializers (fast-json-stringify): the
// contract's user object, an array of them, and the to_json object.

const USER_SCHEMA = {
  type: 'object',
  properties: {
    user_id: { type: 'integer' },
    username: { type: 'string' },
    email: { type: ['string', 'null'] },
    created_at: { type: 'string' },
    updated_at: { type: 'string' },
    is_archived: { type: 'boolean' }
  },
  required: ['user_id', 'username', 'email', 'created_at', 'updated_at', 'is_archived'],
  additionalProperties: false
}

const USERS_SCHEMA = { type: 'array', items: USER_SCHEMA }

const PARAMS_SCHEMA = {
  type: 'object',
  properties: {
    param1: { type: ['string', 'null'] },
    param2: { type: ['string', 'null'] },
    param3: { type: ['string', 'null'] }
  },
  required: ['param1', 'param2', 'param3'],
  additionalProperties: false
}

module.exports = { USER_SCHEMA, USERS_SCHEMA, PARAMS_SCHEMA }
