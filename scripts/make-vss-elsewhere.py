#!/usr/bin/env python3
# Writes, into two existing 64 MiB NTFS volume images orig.img and stor.img in the current folder, an original
# volume with two shadow copies whose stores live on the storage volume (the layout of
# docs/research/vss-store-on-another-volume.md): the 16 KiB blocks at X = 3000 * 16 KiB hold 1s in store 1, 2s in
# store 2 and 3s now. The original's VSS header names volume 11111111-2222-3333-4444-806e6f6e6963 and storage
# volume 11111112-…; its catalog holds the type-2 entries, the storage volume's catalog the type-3 entries.
# libvshadow's vshadowinfo lists the two stores of orig.img as "Data stored outside volume". Own code of the
# project, written from the research notes (tests/vss.rs uses it).
# Prototype (research only): original volume with 2 shadow copies whose stores live on another volume.
import struct, uuid
B=0x4000
VSS=uuid.UUID('3808876b-c176-4e48-b7ae-04046e6cc752').bytes_le
V=uuid.UUID('11111111-2222-3333-4444-806e6f6e6963'); S=uuid.UUID('11111112-2222-3333-4444-806e6f6e6963')
ids=[dict(store=uuid.UUID(int=0xaaaa0000+i, version=1), shadow=uuid.uuid4(), set=uuid.uuid4()) for i in (1,2)]
SIZE=64*1024*1024
def hdr(kind, rel, cur, nxt, info=0):
    h=bytearray(128); h[:16]=VSS; struct.pack_into('<IIQQQQ',h,16,1,kind,rel,cur,nxt,info); return h
def volhdr(cat, maxsize, vol, stor):
    h=bytearray(128); h[:16]=VSS; struct.pack_into('<IIQQQQQ',h,16,1,1,0x1e00,0x1e00,0,cat,maxsize); h[64:80]=vol.bytes_le; h[80:96]=stor.bytes_le; return h
o=open('orig.img','r+b'); s=open('stor.img','r+b')
def w(f,off,data): f.seek(off); f.write(bytes(data))
X=3000*B
w(o,X,b'3'*2*B)
# original: header + catalog with type-2 entries only
ocat=3900*B
w(o,0x1e00,volhdr(ocat,0x10000000,V,S))
cat=bytearray(B); cat[:128]=hdr(2,0,ocat,0)
for i,d in enumerate(ids):
    e=bytearray(128); struct.pack_into('<QQ',e,0,2,SIZE); e[16:32]=d['store'].bytes_le
    struct.pack_into('<QQQ',e,32,i+1,0x40,132000000000000000+i*600000000); cat[128*(i+1):128*(i+2)]=e
w(o,ocat,cat)
# storage: header (own GUID twice), catalog with type-3 entries, one store "file" per shadow copy
scat=3900*B
w(s,0x1e00,volhdr(scat,0,S,S))
cat=bytearray(B); cat[:128]=hdr(2,0,scat,0)
for i,d in enumerate(ids):
    base=(3500+100*i)*B; H,L,R,M,D0=base,base+B,base+2*B,base+3*B,base+4*B
    info=bytearray(); info+=uuid.uuid4().bytes_le+d['shadow'].bytes_le+d['set'].bytes_le+struct.pack('<IIII',0x1d,1,0x2001d,0)
    m='TEST'.encode('utf-16-le'); info+=struct.pack('<H',len(m))+m+struct.pack('<H',len(m))+m
    b=bytearray(B); b[:128]=hdr(4,0,H,0,len(info)); b[128:128+len(info)]=info; w(s,H,b)
    b=bytearray(B); b[:128]=hdr(3,L-base,L,0)
    for k in range(2):
        struct.pack_into('<QQQII',b,128+32*k,X+k*B,(D0-base)+k*B,D0+k*B,0,0)
    w(s,L,b)
    b=bytearray(B); b[:128]=hdr(5,R-base,R,0); struct.pack_into('<QQQ',b,128,base,0,6*B); w(s,R,b)
    b=bytearray(B); b[:128]=hdr(6,M-base,M,0); w(s,M,b)
    w(s,D0,str(i+1).encode()*2*B)
    e=bytearray(128); struct.pack_into('<QQ',e,0,3,L); e[16:32]=d['store'].bytes_le
    struct.pack_into('<QQQQQQ',e,32,H,R,M,0,6*B,0); cat[128*(i+1):128*(i+2)]=e
w(s,scat,cat)
o.close(); s.close()
print('stores', [str(d['store']) for d in ids])
