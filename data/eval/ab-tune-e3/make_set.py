"""Fresh A/B prompts: none in a label file, tuning pair, suite or eval set."""
import json, glob, csv, random
S='../shared/data/prompts/'
seen=set()
def norm(t): return ' '.join(t.lower().split()).strip(' .')
for f in glob.glob('tests/data/faithfulness/*.jsonl')+glob.glob('data/tuning/*/*.jsonl')+['promptx/suites/enhance-400.jsonl']+glob.glob('data/eval/*.jsonl'):
    for l in open(f):
        r=json.loads(l)
        for k in ('prompt','input'):
            if k in r: seen.add(norm(r[k]))
def lines(p): return [l.rstrip('\n') for l in open(p, encoding='utf-8')]
pick=[]
def take(src, items, start, step, n, kind):
    got=0; i=start
    while got<n and i<len(items):
        t=items[i].strip()
        if t and norm(t) not in seen and len(t.split())>=2:
            pick.append((kind, src, i+1, t)); seen.add(norm(t)); got+=1
        i+=step
v2=lines(S+'vbench2_full_text.txt'); vd=lines(S+'vbench_all_dimension.txt')
take('vbench2_full_text.txt', v2, 5, 11, 45, 't2v')
take('vbench_all_dimension.txt', vd, 205, 7, 35, 't2v')
cb=[]
for f in sorted(glob.glob(S+'t2i_compbench/*_val.txt')):
    for i,l in enumerate(lines(f)): cb.append((f.split('/')[-1], i+1, l))
random.Random(38).shuffle(cb)
n=0
for f,i,l in cb:
    if n>=40: break
    if norm(l) not in seen and l.strip(): pick.append(('t2i', f, i, l.strip())); seen.add(norm(l)); n+=1
rows=list(csv.reader(open(S+'partiprompts.tsv', encoding='utf-8'), delimiter='\t'))
parti=[r[0] for r in rows]
take('partiprompts.tsv', parti, 810, 23, 30, 't2i')
T={'t2v':['video','wan-t2v','ltx-video','hunyuan-video','cogvideox'],'t2i':['image','flux1','flux2','sd3','qwen-image']}
c={'t2v':0,'t2i':0}
out=open('/tmp/ab/set.jsonl','w')
for k,(kind,src,line,t) in enumerate(pick):
    tgt=T[kind][c[kind]%5]; c[kind]+=1
    out.write(json.dumps({'id':f'ab38-{k:03d}','prompt':t,'target':tgt,'source':src,'line':line})+'\n')
print(len(pick), c)
