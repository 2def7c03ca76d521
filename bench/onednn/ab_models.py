# Whole models, interleaved: braid on Debian oneDNN 2.6 (BRAID_26), braid on oneDNN 3.2 (BRAID_32, branch dnnl3) and ONNX Runtime, sequential at 1 and 2 threads (R rounds, IT iterations).
import subprocess, json, sys, statistics, time, os

# The .onnx files: bench/peers.py's exports (braid export M, batch 1) in ONNX_DIR.
ONNX_DIR=os.environ.get('ONNX_DIR','/tmp/braid-peers')
R=int(os.environ.get('R','3')); IT=os.environ.get('IT','10')
models=sys.argv[1:] or ['inception_v3','googlenet','resnet50','squeezenet','nasnet','randwire']
bins={'dnnl2.6':os.environ.get('BRAID_26','build/braid'),'dnnl3.2':os.environ.get('BRAID_32','../wt-dnnl3/build/braid')}
extra=os.environ.get('EXTRA','').split()
def braid(b,m,t):
    cpus='0' if t==1 else '0,1'
    out=subprocess.run(['taskset','-c',cpus,b,'run',f'{ONNX_DIR}/{m}_b1.onnx','--algo','sequential','--threads-per-stream',str(t),'--iters',IT,'--warmup','3','--json']+extra,capture_output=True,text=True)
    if out.returncode: return None
    return json.loads(out.stdout)['latency_ms']['median']
def ort(m,t):
    code=f'''
import onnxruntime as ort, numpy as np, time
so=ort.SessionOptions(); so.intra_op_num_threads={t}
s=ort.InferenceSession("{ONNX_DIR}/{m}_b1.onnx",so,providers=["CPUExecutionProvider"])
f={{i.name:np.random.rand(*[d if isinstance(d,int) else 1 for d in i.shape]).astype(np.float32) for i in s.get_inputs()}}
for _ in range(3): s.run(None,f)
ts=[]
for _ in range({IT}):
    a=time.perf_counter(); s.run(None,f); ts.append((time.perf_counter()-a)*1e3)
ts.sort(); print(ts[len(ts)//2])
'''
    cpus='0' if t==1 else '0,1'
    out=subprocess.run(['taskset','-c',cpus,'.venv/bin/python','-c',code],capture_output=True,text=True)
    return float(out.stdout.strip()) if out.returncode==0 else None
res={}
for r in range(R):
    for m in models:
        cfgs=[(k,t) for t in (1,2) for k in list(bins)+['ort']]
        cfgs=cfgs[r%len(cfgs):]+cfgs[:r%len(cfgs)]
        for k,t in cfgs:
            v=ort(m,t) if k=='ort' else braid(bins[k],m,t)
            res.setdefault((m,k,t),[]).append(v)
            print(r,m,k,t,v,flush=True)
print('\nmodel threads | dnnl2.6 dnnl3.2 ort | 3.2/2.6 2.6/ort 3.2/ort')
for m in models:
    for t in (1,2):
        md={k:statistics.median([x for x in res[(m,k,t)] if x is not None]) for k in list(bins)+['ort']}
        print(f"{m} {t} | {md['dnnl2.6']:.2f} {md['dnnl3.2']:.2f} {md['ort']:.2f} | {md['dnnl3.2']/md['dnnl2.6']:.3f} {md['dnnl2.6']/md['ort']:.3f} {md['dnnl3.2']/md['ort']:.3f}")
