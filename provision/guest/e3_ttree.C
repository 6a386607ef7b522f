// E3 (FAX) guest side, the ROOT half: the analysis loop and the file writer, compiled by
// ROOT's interpreter at run time (e3_ttree.py declares this file), so that neither the
// event loop nor the writer runs in Python under the emulated CPU.
#include <TBranch.h>
#include <TFile.h>
#include <TLeaf.h>
#include <TMath.h>
#include <TRandom3.h>
#include <TTree.h>

#include <cstring>
#include <string>
#include <vector>

namespace tbe3 {

struct LoopResult {
   Long64_t events = 0;               // entries read
   Long64_t bytes = 0;                // uncompressed bytes GetEntry returned
   std::vector<ULong64_t> sums;       // per branch: sum of the values' 32-bit patterns (mod 2^64)
   std::string error;                 // empty when every entry was read
};

// Reads every `every`-th entry of [0, stop) of the selected branches (4-byte scalars)
// through TTree::GetEntry; the tree's other branches must be switched off by the caller.
// The checksum of each branch does not depend on the order of addition, so the uproot
// reader computes the same numbers with numpy.
LoopResult loop(TTree *tree, const std::vector<std::string> &names, Long64_t stop, Long64_t every)
{
   LoopResult r;
   std::vector<UInt_t> buf(names.size(), 0);
   r.sums.assign(names.size(), 0);
   for (size_t i = 0; i < names.size(); ++i) {
      TLeaf *leaf = tree->GetLeaf(names[i].c_str());
      if (!leaf || leaf->GetLenType() != 4 || leaf->GetLen() != 1) {
         r.error = "branch " + names[i] + " is not a 4-byte scalar";
         return r;
      }
      tree->SetBranchAddress(names[i].c_str(), static_cast<void *>(&buf[i]));
   }
   for (Long64_t e = 0; e < stop; e += every) {
      Int_t n = tree->GetEntry(e);
      if (n <= 0) {
         r.error = "GetEntry(" + std::to_string(e) + ") returned " + std::to_string(n) + " (read error)";
         break;
      }
      r.bytes += n;
      for (size_t i = 0; i < buf.size(); ++i)
         r.sums[i] += buf[i];
      ++r.events;
   }
   tree->ResetBranchAddresses();
   return r;
}

// Writes `path`: a TTree "events" of `nbranches` 4-byte branches (every fifth an Int_t
// count, the others Float_t momenta rounded to 0.01 so baskets compress as real ones do),
// baskets of `basketEvents` values (buffer 4 * basketEvents bytes), ZLIB at `level`, and
// clusters of `clusterEvents` entries made by FlushBaskets (not by AutoFlush, after whose
// first cluster ROOT resizes the baskets). Returns "" or what went wrong.
std::string write(const char *path, int nbranches, Long64_t nevents, int basketEvents, Long64_t clusterEvents,
                  int seed, int level)
{
   TFile f(path, "RECREATE", "E3 analysis events", 100 + level);  // 1xx: ZLIB
   if (f.IsZombie())
      return std::string("cannot create ") + path;
   TTree tree("events", "E3 analysis events");
   // One cluster: AutoFlush at the last entry (with none, readers estimate cluster
   // boundaries from their cache size). Several: FlushBaskets marks each boundary.
   tree.SetAutoFlush(clusterEvents >= nevents ? nevents : 0);
   tree.SetAutoSave(0);
   std::vector<Float_t> fv(nbranches);
   std::vector<Int_t> iv(nbranches);
   for (int i = 0; i < nbranches; ++i) {
      std::string name = Form("b%04d", i);
      if (i % 5 == 4)
         tree.Branch(name.c_str(), &iv[i], (name + "/I").c_str(), 4 * basketEvents);
      else
         tree.Branch(name.c_str(), &fv[i], (name + "/F").c_str(), 4 * basketEvents);
   }
   TRandom3 rng(seed);
   for (Long64_t e = 0; e < nevents; ++e) {
      for (int i = 0; i < nbranches; ++i) {
         if (i % 5 == 4)
            iv[i] = rng.Poisson(3 + i % 7);
         else
            fv[i] = TMath::Nint(rng.Exp(20.0 + i % 11) * 100) / 100.0f;
      }
      if (tree.Fill() <= 0)
         return "TTree::Fill failed at entry " + std::to_string(e);
      if ((e + 1) % clusterEvents == 0 && e + 1 < nevents)
         tree.FlushBaskets();
   }
   if (tree.Write() <= 0 || f.TestBit(TFile::kWriteError))
      return std::string("cannot write ") + path;
   f.Close();
   return "";
}

} // namespace tbe3
