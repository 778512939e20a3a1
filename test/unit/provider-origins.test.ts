import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cloudy } from '../../src/providers/cloudy.js';
import { genvendorVertex } from '../../src/providers/genvendor-vertex.js';

describe('provider origins refuse locations that are not one (whichever route supplied them)', () => {
  it('cloudy: a region is a hostname label, so only region-shaped values pass', () => {
    assert.equal(cloudy.publicOrigin({ region: 'eu-central-1' }), 'https://bedrock-runtime.eu-central-1.amazonaws.com');
    assert.equal(cloudy.publicOrigin({}), 'https://bedrock-runtime.us-east-1.amazonaws.com');
    for (const region of ['evil.com/', 'us-east-1.evil.com#', 'x@y', '']) {
      assert.throws(() => cloudy.publicOrigin({ region }), { type: 'request_error' }, region);
    }
  });

  it('genvendor_vertex: likewise for the location', () => {
    assert.equal(genvendorVertex.publicOrigin({ location: 'us-central1' }), 'https://us-central1-aiplatform.googleapis.com');
    assert.equal(genvendorVertex.publicOrigin({}), 'https://aiplatform.googleapis.com');
    for (const location of ['evil.com/x', 'us-central1.evil', '../']) {
      assert.throws(() => genvendorVertex.publicOrigin({ location }), { type: 'request_error' }, location);
    }
  });
});
