"""Merge arm A and B outputs, dedupe identical texts per prompt, shuffle, split into N parts with hidden ids."""
import json, random, sys
n_parts = int(sys.argv[1])
set_rows = {json.loads(l)['prompt']: json.loads(l) for l in open('/tmp/ab/set.jsonl')}
items, key = [], {}
for arm in 'AB':
    for l in open(f'/tmp/ab/{arm}/results.jsonl'):
        r = json.loads(l)
        base = set_rows[r['prompt']]
        k = (base['id'], r['text'])
        if k in key:
            key[k]['arms'] += arm; continue
        it = {'base': base['id'], 'arms': arm, 'target': base['target'], 'prompt': r['prompt'], 'output': r['text']}
        key[k] = it; items.append(it)
random.Random(3838).shuffle(items)
for i, it in enumerate(items): it['item'] = f'x{i:03d}'
json.dump(items, open('/tmp/ab/key.json', 'w'), ensure_ascii=False, indent=1)
for p in range(n_parts):
    with open(f'/tmp/ab/part{p}.jsonl', 'w') as f:
        for it in items[p::n_parts]:
            f.write(json.dumps({'id': it['item'], 'target': it['target'], 'prompt': it['prompt'], 'output': it['output']}, ensure_ascii=False) + '\n')
print(len(items), 'items')
